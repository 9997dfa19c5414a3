"""coordspec's IO side: the reference served over Kafka's wire protocol (``coordspec.broker.server``:
framing and dispatch in ``coordspec.broker.wire``, one module per API in ``coordspec.broker.apis``, on-disk
logs in ``coordspec.broker.log``, the group coordinator driven by ``coordspec.broker.group_service``) and the
real components (ZooKeeper) with the drivers that connect them to the pure reference. The
single broker and the cluster's (``coordspec.broker.cluster``) share one front door: the
connections (``coordspec.broker.connections``), the dispatcher, the API table and the group
driver (``coordspec.broker.group_driver``).
Arrows run one way: ``broker`` imports ``reference``, never the reverse.
"""
