"""coordspec's IO side: the reference served over Kafka's wire protocol (``broker.server``:
framing and dispatch in ``broker.wire``, one module per API in ``broker.apis``, on-disk
logs in ``broker.log``, the group coordinator driven by ``broker.group_service``) and the
real components (ZooKeeper) with the drivers that connect them to the pure reference.
Arrows run one way: ``broker`` imports ``reference``, never the reverse.
"""
