"""coordspec's IO side: real components (ZooKeeper) and the drivers that connect them to
the pure reference. Arrows run one way: ``broker`` imports ``reference``, never the reverse.
"""
