"""Real ZooKeeper for coordspec: start and stop Debian's server on 127.0.0.1
(:mod:`coordspec.broker.zookeeper.process`) and apply the reference's ZooKeeper operations to it
through kazoo (:mod:`coordspec.broker.zookeeper.executor`)."""
