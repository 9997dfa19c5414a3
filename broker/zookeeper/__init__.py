"""Real ZooKeeper for coordspec: start and stop Debian's server on 127.0.0.1
(:mod:`broker.zookeeper.process`) and apply the reference's ZooKeeper operations to it
through kazoo (:mod:`broker.zookeeper.executor`)."""
