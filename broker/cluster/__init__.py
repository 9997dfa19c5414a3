"""A cluster of brokers on a real ZooKeeper, every decision taken by the reference
(replication model and coordinator host); see node.py, and launcher.py for ``coordspec cluster up``."""
