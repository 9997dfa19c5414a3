-------------------------- MODULE IsrVersionedWrites --------------------------
(***************************************************************************)
(* Leader, leader epoch and ISR of a partition, kept in a versioned store   *)
(* (ZooKeeper) and changed only by conditional writes: the controller's     *)
(* leader elections and the partition leader's own ISR shrinks and expands. *)
(* Kafka followed: ZooKeeper-mode Kafka 2.6 (the last release in which the  *)
(* leader writes its ISR change to ZooKeeper itself, before KIP-497), with  *)
(* the controller-epoch fencing of KAFKA-6082 (every controller write is a  *)
(* ZooKeeper multi that starts with a check of /controller_epoch). Where    *)
(* the seed design differs from 2.6 it wins: a leader whose ISR write fails *)
(* re-reads the state and steps down (StepDown); 2.6 only skips the write.   *)
(*                                                                           *)
(* Action and invariant names are those of spec/isr-versioned-writes.md and *)
(* reference/replication. Each action's comment names the Kafka behaviour   *)
(* it models and the rule of spec/isr-versioned-writes.md (ISR-n) it stands *)
(* for.                                                                     *)
(*                                                                           *)
(* Abstractions, each a choice for reviewers to weigh:                       *)
(*  - One partition, replicated on every broker. Partitions are independent *)
(*    in this protocol (only the controller epoch is shared), so a second   *)
(*    partition adds interleavings, not behaviours. ChangeLeaders, the      *)
(*    controller's batched reaction, is thus one ElectLeader.               *)
(*  - The store is one variable per znode: /controller, /controller_epoch  *)
(*    (its data and its zk version move together, so one number stands for *)
(*    both), the registrations /brokers/ids/<id> (= a live session), and    *)
(*    the partition state with its zk_version.                              *)
(*  - The controller reads the registrations and the partition state when  *)
(*    it decides: Kafka's controller re-reads a partition state after a    *)
(*    BadVersion and retries, and a retry loop ending in success is one     *)
(*    step here. Watch notifications that arrive late are a controller that *)
(*    has not acted yet.                                                    *)
(*  - LeaderAndIsr requests are a set that is never emptied: delivery may   *)
(*    be late, reordered, repeated or never, as in hachikuji's specs. A     *)
(*    restarted broker reads the published state at start-up (it stands for *)
(*    the LeaderAndIsr the controller sends on broker start-up).            *)
(*  - A log is a sequence of leader epochs: the record at offset i is        *)
(*    identified by (i, epoch of i), as leader-epoch truncation does.       *)
(*    Logs and high watermarks survive a crash (no unclean shutdown).       *)
(*  - Time is abstract: "lagging longer than replica.lag.time.max.ms" is    *)
(*    "not caught up now"; sessions expire whenever the broker is down or   *)
(*    paused. InitLeaders (topic creation) is folded into Init: the topic   *)
(*    exists with every replica in the ISR and no leader yet. Reassign is   *)
(*    left out, and so is DeleteTopic (ISR-9, the DeleteTopics API): after  *)
(*    StopReplica the controller deletes the partition's znodes, the state  *)
(*    by a delete conditional on its zk_version, in multis headed by the    *)
(*    epoch check. Such a delete is fenced exactly as a conditional write,  *)
(*    and after it every write to the state fails (NONODE: the leader steps *)
(*    down), so deletion only ends the partition's behaviour; it adds no    *)
(*    step in which an invariant here could break. The Python reference     *)
(*    runs it under every invariant (test_replication_stateful.py). So is   *)
(*    partition addition (ISR-20, the CreatePartitions API): an added       *)
(*    partition is a new one, started by the InitLeaders that Init folds    *)
(*    in, by a create in a multi headed by the epoch check, and the known   *)
(*    partitions' states are left alone; its behaviours are this spec's     *)
(*    one partition from Init, and partitions are independent (above).      *)
(*  - Where Kafka makes a fixed choice the spec allows every choice, so its *)
(*    behaviours include Kafka's: the new leader is any live ISR member     *)
(*    (Kafka: the first in assignment order), an offline partition keeps   *)
(*    any one member of its ISR (Kafka: the last one removed).              *)
(*  - A follower's own high watermark only serves consumers and is left    *)
(*    out; hw[b] is the high watermark b had as leader. ISR writes are one  *)
(*    step, so the "maximal ISR" of a write in flight does not arise.       *)
(*  - Crashes and pauses are bounded together by MaxFaults; the healing     *)
(*    steps (resume, expiry, restart) are not bounded.                      *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    Brokers,              \* the brokers; each holds a replica of the partition
    MinInsyncReplicas,    \* min.insync.replicas (acks=all)
    MaxRecords,           \* bound: longest log
    MaxLeaderEpoch,       \* bound: controller writes (each bumps the leader epoch)
    MaxControllerEpoch,   \* bound: controller elections
    MaxVersion,           \* bound: writes to the partition state (its zk_version)
    MaxFaults,            \* bound: crashes and GC pauses, together
    \* Kafka's unclean.leader.election.enable (false by default since 0.11): when no
    \* ISR member is alive, elect any live replica, with the ISR reset to it alone.
    UncleanLeaderElection,
    \* Mutant flags: each, when TRUE, breaks one rule (tla/README.md lists them).
    BugStaleVersionWrite,          \* the store accepts a write whose expected version is stale
    BugElectWithoutIsrCheck,       \* the controller elects any live replica, keeping the ISR
    BugShrinkIsrBeforeWrite,       \* the leader uses its shrunk ISR even when the write failed
    BugSkipControllerEpochCheck    \* controller writes without the /controller_epoch check

None == "none"

VARIABLES
    \* the store (ZooKeeper)
    controller,       \* /controller: the broker whose session holds it, or None
    controllerEpoch,  \* /controller_epoch (data = zk version)
    session,          \* [Brokers -> BOOLEAN]: a live session, hence /brokers/ids/<id> exists
    partState,        \* the partition state: [leader, leaderEpoch, isr, controllerEpoch]
    zkVersion,        \* the partition state's zk_version
    \* the brokers
    brokerState,      \* [Brokers -> {"up", "paused", "down"}]
    ctrlEpochOf,      \* [Brokers -> Nat]: the epoch a broker acts as controller with, 0 = not
    seenCtrlEpoch,    \* [Brokers -> Nat]: the highest controller epoch a broker has accepted
    view,             \* [Brokers -> partition state + zkVersion]: what the broker holds
    fetched,          \* [Brokers -> BOOLEAN]: fetched from its leader at its current leader epoch
    log,              \* [Brokers -> Seq(leader epochs)]
    hw,               \* [Brokers -> Nat]: high watermark
    \* messages
    lisr,             \* the LeaderAndIsr requests sent: [controllerEpoch, partition]
    \* history (ghosts)
    lastWrite,        \* the last partition-state write the store accepted: [expected, before]
    committed,        \* the acknowledged (acks=all) records: <<offset, leader epoch>>
    faults            \* crashes and pauses so far (a bound for model checking)

store == <<controller, controllerEpoch, session, partState, zkVersion>>
brokers == <<brokerState, ctrlEpochOf, seenCtrlEpoch, view, fetched, log, hw>>
vars == <<controller, controllerEpoch, session, partState, zkVersion, brokerState, ctrlEpochOf,
          seenCtrlEpoch, view, fetched, log, hw, lisr, lastWrite, committed, faults>>

NoView == [leader |-> None, leaderEpoch |-> -1, isr |-> {}, controllerEpoch |-> 0, zkVersion |-> -1]
Published == [leader |-> partState.leader, leaderEpoch |-> partState.leaderEpoch, isr |-> partState.isr,
              controllerEpoch |-> partState.controllerEpoch, zkVersion |-> zkVersion]

Min(S) == CHOOSE m \in S : \A x \in S : m <= x
Max(S) == CHOOSE m \in S : \A x \in S : m >= x
Live == {b \in Brokers : session[b]}

(* The length of the longest common prefix of two logs: with logs of leader epochs this  *)
(* is where leader-epoch truncation (KIP-101, KIP-279) cuts a follower's log.           *)
CommonPrefix(s, t) ==
    Max({k \in 0..Min({Len(s), Len(t)}) : \A i \in 1..k : s[i] = t[i]})

(* The leader epoch start offset: where the leader's own epoch begins in its log. *)
EpochStart(b) == Cardinality({i \in 1..Len(log[b]) : log[b][i] < view[b].leaderEpoch})

Init ==
    /\ controller = None
    /\ controllerEpoch = 0
    /\ session = [b \in Brokers |-> TRUE]
    /\ partState = [leader |-> None, leaderEpoch |-> 0, isr |-> Brokers, controllerEpoch |-> 0]
    /\ zkVersion = 0
    /\ brokerState = [b \in Brokers |-> "up"]
    /\ ctrlEpochOf = [b \in Brokers |-> 0]
    /\ seenCtrlEpoch = [b \in Brokers |-> 0]
    /\ view = [b \in Brokers |-> NoView]
    /\ fetched = [b \in Brokers |-> FALSE]
    /\ log = [b \in Brokers |-> <<>>]
    /\ hw = [b \in Brokers |-> 0]
    /\ lisr = {}
    /\ lastWrite = [expected |-> 0, before |-> 0]
    /\ committed = {}
    /\ faults = 0

-----------------------------------------------------------------------------
(* Broker processes and their ZooKeeper sessions (ISR-18). *)

(* StartBroker: a broker whose session is gone registers with a new session.         *)
(* A broker that was down starts: it reads the published partition state (standing  *)
(* in for the LeaderAndIsr the controller sends on broker start-up). A broker that   *)
(* kept running through its session's expiry (a zombie) re-registers; Kafka 2.6     *)
(* resigns controllership then (RegisterBrokerAndReelect), but keeps its partitions' *)
(* roles until a LeaderAndIsr or a failed write tells it otherwise.                  *)
StartBroker(b) ==
    /\ ~session[b]
    /\ brokerState[b] \in {"down", "up"}
    /\ session' = [session EXCEPT ![b] = TRUE]
    /\ IF brokerState[b] = "down"
          THEN /\ brokerState' = [brokerState EXCEPT ![b] = "up"]
               /\ view' = [view EXCEPT ![b] = Published]
               /\ seenCtrlEpoch' = [seenCtrlEpoch EXCEPT ![b] = partState.controllerEpoch]
               /\ UNCHANGED ctrlEpochOf
          ELSE /\ ctrlEpochOf' = [ctrlEpochOf EXCEPT ![b] = 0]
               /\ UNCHANGED <<brokerState, view, seenCtrlEpoch>>
    /\ UNCHANGED <<controller, controllerEpoch, partState, zkVersion, fetched, log, hw, lisr,
                   lastWrite, committed, faults>>

(* CrashBroker: the process dies and forgets what it held; its log and its checkpointed *)
(* high watermark stay on disk. Its session (and any znode it owns) lives on until      *)
(* ExpireSession.                                                                       *)
CrashBroker(b) ==
    /\ brokerState[b] \in {"up", "paused"}
    /\ faults < MaxFaults
    /\ faults' = faults + 1
    /\ brokerState' = [brokerState EXCEPT ![b] = "down"]
    /\ ctrlEpochOf' = [ctrlEpochOf EXCEPT ![b] = 0]
    /\ seenCtrlEpoch' = [seenCtrlEpoch EXCEPT ![b] = 0]
    /\ view' = [view EXCEPT ![b] = NoView]
    /\ fetched' = [fetched EXCEPT ![b] = FALSE]
    /\ UNCHANGED <<store, log, hw, lisr, lastWrite, committed>>

(* PauseBroker / ResumeBroker: a GC pause. A paused broker does nothing and answers no *)
(* fetch; after it resumes it acts on what it held before: if its session expired      *)
(* meanwhile it is a zombie leader or a zombie controller.                             *)
PauseBroker(b) ==
    /\ brokerState[b] = "up"
    /\ faults < MaxFaults
    /\ faults' = faults + 1
    /\ brokerState' = [brokerState EXCEPT ![b] = "paused"]
    /\ UNCHANGED <<store, ctrlEpochOf, seenCtrlEpoch, view, fetched, log, hw, lisr, lastWrite, committed>>

ResumeBroker(b) ==
    /\ brokerState[b] = "paused"
    /\ brokerState' = [brokerState EXCEPT ![b] = "up"]
    /\ UNCHANGED <<store, ctrlEpochOf, seenCtrlEpoch, view, fetched, log, hw, lisr, lastWrite, committed, faults>>

(* ExpireSession: ZooKeeper expires the session of a broker that stopped heartbeating *)
(* (down or paused): its ephemeral znodes, its registration and /controller if it     *)
(* held it, vanish; the watches fire (the controller reads registrations when it acts).*)
ExpireSession(b) ==
    /\ session[b]
    /\ brokerState[b] \in {"down", "paused"}
    /\ session' = [session EXCEPT ![b] = FALSE]
    /\ controller' = IF controller = b THEN None ELSE controller
    /\ UNCHANGED <<controllerEpoch, partState, zkVersion, brokers, lisr, lastWrite, committed, faults>>

-----------------------------------------------------------------------------
(* The controller. *)

(* ElectController: /controller is free; a registered broker wins the race with one   *)
(* multi: create /controller (ephemeral) + set /controller_epoch to epoch + 1 on the    *)
(* version it read (ISR-1, ISR-2). Kafka's new controller also re-sends the current     *)
(* state to every broker (onControllerFailover); that request changes no broker's role *)
(* (the original one stays deliverable), so it is left out: brokers learn the new      *)
(* controller epoch from its first write.                                               *)
ElectController(b) ==
    /\ controller = None
    /\ brokerState[b] = "up"
    /\ session[b]
    /\ controllerEpoch < MaxControllerEpoch
    /\ controller' = b
    /\ controllerEpoch' = controllerEpoch + 1
    /\ ctrlEpochOf' = [ctrlEpochOf EXCEPT ![b] = controllerEpoch + 1]
    /\ UNCHANGED <<session, partState, zkVersion, brokerState, seenCtrlEpoch, view, fetched, log, hw,
                   lisr, lastWrite, committed, faults>>

(* The leader and ISR the controller may write, from the registrations and the state  *)
(* it reads (Kafka 2.6 KafkaController.onBrokerFailure / onBrokerStartup):             *)
(*  - the leader lives but ISR members died: OfflineReplica removes them from the ISR;  *)
(*  - the leader died or there is none: OfflinePartitionLeaderElectionStrategy elects a *)
(*    live ISR member, the ISR becomes the live ISR;                                    *)
(*  - no ISR member lives: unclean election if enabled (ISR = the new leader); else the *)
(*    partition goes offline (leader -1) and keeps a one-member ISR, as removing dead   *)
(*    replicas one at a time never empties it.                                          *)
Decisions ==
    LET L == partState.leader
        isr == partState.isr
        liveIsr == isr \cap Live
        candidates == IF BugElectWithoutIsrCheck THEN Live ELSE liveIsr
    IN  IF L \in Live
           THEN IF isr \subseteq Live THEN {} ELSE {[leader |-> L, isr |-> liveIsr]}
        ELSE IF liveIsr /= {}
           THEN {[leader |-> l, isr |-> liveIsr] : l \in candidates}
        ELSE IF UncleanLeaderElection /\ Live /= {}
           THEN {[leader |-> l, isr |-> {l}] : l \in Live}
        ELSE IF L /= None \/ Cardinality(isr) > 1
           THEN {[leader |-> None, isr |-> {m}] : m \in isr}
        ELSE {}

(* ElectLeader (ChangeLeaders, per partition): the controller writes one decision as   *)
(* Multi(Check(/controller_epoch, its epoch's version), SetData(state, zk_version)),     *)
(* with the next leader epoch, and sends LeaderAndIsr. If another controller has been   *)
(* elected the check fails, ZooKeeper applies nothing, and the controller resigns       *)
(* (ControllerMovedException). Rules ISR-3, ISR-4, ISR-6, ISR-7; invariants LeaderInIsr,*)
(* NoWriteWithStaleVersion, ControllerEpochMonotonic.                                   *)
ElectLeader(c) ==
    /\ brokerState[c] = "up"
    /\ ctrlEpochOf[c] > 0
    /\ partState.leaderEpoch < MaxLeaderEpoch
    /\ zkVersion < MaxVersion
    /\ \E d \in Decisions :
         IF ctrlEpochOf[c] = controllerEpoch \/ BugSkipControllerEpochCheck
            THEN LET new == [leader |-> d.leader, leaderEpoch |-> partState.leaderEpoch + 1, isr |-> d.isr,
                             controllerEpoch |-> ctrlEpochOf[c]]
                 IN /\ partState' = new
                    /\ zkVersion' = zkVersion + 1
                    /\ lastWrite' = [expected |-> zkVersion, before |-> zkVersion]
                    /\ lisr' = lisr \cup {[controllerEpoch |-> ctrlEpochOf[c],
                                           partition |-> [leader |-> d.leader, leaderEpoch |-> new.leaderEpoch,
                                                          isr |-> d.isr, controllerEpoch |-> ctrlEpochOf[c],
                                                          zkVersion |-> zkVersion + 1]]}
                    /\ UNCHANGED <<controller, controllerEpoch, session, brokers, committed, faults>>
            ELSE /\ ctrlEpochOf' = [ctrlEpochOf EXCEPT ![c] = 0]
                 /\ UNCHANGED <<store, brokerState, seenCtrlEpoch, view, fetched, log, hw, lisr,
                                lastWrite, committed, faults>>

(* LeaderAndIsr: a broker applies a request. ReplicaManager.becomeLeaderOrFollower     *)
(* (2.6) refuses a request from an older controller epoch (STALE_CONTROLLER_EPOCH) and  *)
(* otherwise records the controller epoch; it applies a partition's state only if the   *)
(* leader epoch is newer than the one it holds: it becomes leader (makeLeader) or the   *)
(* follower of the new leader (makeFollower), to fetch again at the new epoch. ISR-11. *)
LeaderAndIsr(b) == \E r \in lisr :
    /\ brokerState[b] = "up"
    /\ r.controllerEpoch >= seenCtrlEpoch[b]
    /\ \/ r.partition.leaderEpoch > view[b].leaderEpoch
       \/ r.controllerEpoch > seenCtrlEpoch[b]
    /\ seenCtrlEpoch' = [seenCtrlEpoch EXCEPT ![b] = r.controllerEpoch]
    /\ IF r.partition.leaderEpoch > view[b].leaderEpoch
          THEN /\ view' = [view EXCEPT ![b] = r.partition]
               /\ fetched' = [fetched EXCEPT ![b] = FALSE]
          ELSE UNCHANGED <<view, fetched>>
    /\ UNCHANGED <<store, brokerState, ctrlEpochOf, log, hw, lisr, lastWrite, committed, faults>>

-----------------------------------------------------------------------------
(* The partition: leaders, followers, their logs. *)

Leads(b) == brokerState[b] = "up" /\ view[b].leader = b

(* b follows l at l's leader epoch: it fetches from l and l accepts its fetches. *)
FollowsAtEpoch(f, l) == view[f].leader = l /\ view[f].leaderEpoch = view[l].leaderEpoch

(* Produce (acks=all): the leader appends a record at its leader epoch; it answers    *)
(* NOT_ENOUGH_REPLICAS (and appends nothing) when its ISR is below min.insync.replicas *)
(* (ISR-12).                                                                           *)
Produce(l) ==
    /\ Leads(l)
    /\ Len(log[l]) < MaxRecords
    /\ Cardinality(view[l].isr) >= MinInsyncReplicas
    /\ log' = [log EXCEPT ![l] = Append(@, view[l].leaderEpoch)]
    /\ UNCHANGED <<store, brokerState, ctrlEpochOf, seenCtrlEpoch, view, fetched, hw, lisr, lastWrite, committed, faults>>

(* Replicate: a follower fetches from the broker it believes leads, at its leader      *)
(* epoch; the leader answers only a fetch at its own epoch (FENCED_LEADER_EPOCH /       *)
(* UNKNOWN_LEADER_EPOCH otherwise) and only while it runs. The follower first truncates *)
(* to where its log stops matching the leader's (leader-epoch truncation, KIP-101/279), *)
(* then appends the leader's next record (ISR-14). A follower's own high watermark is  *)
(* not modelled; hw[b] is the one b had as leader, cut back if truncation shortened    *)
(* its log below it.                                                                   *)
Replicate(f) ==
    LET l == view[f].leader IN
    /\ brokerState[f] = "up"
    /\ l \in Brokers \ {f}
    /\ Leads(l)
    /\ FollowsAtEpoch(f, l)
    /\ LET keep == CommonPrefix(log[f], log[l])
           newLog == IF keep < Len(log[l])
                        THEN Append(SubSeq(log[f], 1, keep), log[l][keep + 1])
                        ELSE SubSeq(log[f], 1, keep)
       IN /\ log' = [log EXCEPT ![f] = newLog]
          /\ hw' = [hw EXCEPT ![f] = Min({@, Len(newLog)})]
    /\ fetched' = [fetched EXCEPT ![f] = TRUE]
    /\ UNCHANGED <<store, brokerState, ctrlEpochOf, seenCtrlEpoch, view, lisr, lastWrite, committed, faults>>

(* AdvanceHighWatermark: once every other member of the ISR the leader holds has      *)
(* fetched at its epoch, HW = the least log end offset over that ISR. Produce requests *)
(* below the new HW that this leader appended are answered: acknowledged ("committed") *)
(* if the ISR still has min.insync.replicas members, else NOT_ENOUGH_REPLICAS_AFTER_    *)
(* APPEND (Partition.checkEnoughReplicasReachOffset). ISR-13.                           *)
AdvanceHighWatermark(l) ==
    LET isr == view[l].isr \cup {l}
        e == view[l].leaderEpoch
        newHw == Min({Len(log[m]) : m \in isr})
    IN /\ Leads(l)
       /\ \A m \in isr \ {l} : FollowsAtEpoch(m, l) /\ fetched[m]
       /\ newHw > hw[l]
       /\ hw' = [hw EXCEPT ![l] = newHw]
       /\ committed' =
             IF Cardinality(view[l].isr) >= MinInsyncReplicas
                THEN committed \cup {<<i, e>> : i \in {j \in hw[l] + 1..newHw : log[l][j] = e}}
                ELSE committed
       /\ UNCHANGED <<store, brokerState, ctrlEpochOf, seenCtrlEpoch, view, fetched, log, lisr, lastWrite, faults>>

(* A follower is in sync when it fetches at the leader's epoch and has caught up with  *)
(* the leader's log end: only an out-of-sync follower may be dropped from the ISR.     *)
InSync(f, l) == FollowsAtEpoch(f, l) /\ fetched[f] /\ Len(log[f]) = Len(log[l])

ShrinkCandidates(l) == {f \in view[l].isr \ {l} : ~InSync(f, l)}

(* Partition.isFollowerInSync (2.6): the follower's log end reached the leader's HW and *)
(* the start offset of the leader's epoch (the ISR-expansion rule found with KIP-320).  *)
ExpandCandidates(l) ==
    {f \in Brokers \ view[l].isr :
        /\ FollowsAtEpoch(f, l)
        /\ fetched[f]
        /\ Len(log[f]) >= hw[l]
        /\ Len(log[f]) >= EpochStart(l)}

(* The leader's conditional write of its ISR (Partition.updateIsr ->                   *)
(* zkClient.conditionalUpdatePath on the zk_version it holds). The state it writes      *)
(* carries its leader epoch and the controller epoch of the state it holds. A write    *)
(* that fails changes nothing: the leader then has to StepDown.                        *)
IsrWrite(l, newIsr, shrinking) ==
    /\ zkVersion < MaxVersion
    /\ IF view[l].zkVersion = zkVersion \/ BugStaleVersionWrite
          THEN /\ partState' = [leader |-> l, leaderEpoch |-> view[l].leaderEpoch, isr |-> newIsr,
                                controllerEpoch |-> view[l].controllerEpoch]
               /\ zkVersion' = zkVersion + 1
               /\ lastWrite' = [expected |-> view[l].zkVersion, before |-> zkVersion]
               /\ view' = [view EXCEPT ![l].isr = newIsr, ![l].zkVersion = zkVersion + 1]
          ELSE /\ shrinking /\ BugShrinkIsrBeforeWrite
               /\ view' = [view EXCEPT ![l].isr = newIsr]
               /\ UNCHANGED <<partState, zkVersion, lastWrite>>
    /\ UNCHANGED <<controller, controllerEpoch, session, brokerState, ctrlEpochOf, seenCtrlEpoch, fetched,
                   log, hw, lisr, committed, faults>>

(* ShrinkIsr: the leader drops a follower that lags (replica.lag.time.max.ms).         *)
(* ISR-15; invariants NoWriteWithStaleVersion, AtMostOneLeaderCanCommit.                *)
ShrinkIsr(l, f) ==
    /\ Leads(l)
    /\ f \in ShrinkCandidates(l)
    /\ IsrWrite(l, view[l].isr \ {f}, TRUE)

(* ExpandIsr: the leader adds a follower that caught up. ISR-16; invariants             *)
(* NoWriteWithStaleVersion, NoCommittedRecordLost.                                      *)
ExpandIsr(l, f) ==
    /\ Leads(l)
    /\ f \in ExpandCandidates(l)
    /\ IsrWrite(l, view[l].isr \cup {f}, FALSE)

(* StepDown: the leader's ISR write would fail (BadVersion): it re-reads the state. If *)
(* it is still the published leader at its own leader epoch it adopts the published    *)
(* ISR and version; otherwise it stops leading, and follows the published leader if   *)
(* that is another broker (if it is itself at a newer epoch, it waits for that          *)
(* LeaderAndIsr). The seed design; Kafka 2.6 only skips the write and keeps leading    *)
(* until the controller's LeaderAndIsr arrives. ISR-17.                                *)
StepDown(l) ==
    /\ Leads(l)
    /\ view[l].zkVersion /= zkVersion
    /\ ShrinkCandidates(l) \cup ExpandCandidates(l) /= {}
    /\ view' = [view EXCEPT ![l] =
                  IF partState.leader = l /\ partState.leaderEpoch = view[l].leaderEpoch THEN Published
                  ELSE IF partState.leader = l THEN [@ EXCEPT !.leader = None]
                  ELSE Published]
    /\ fetched' = [fetched EXCEPT ![l] = FALSE]
    /\ UNCHANGED <<store, brokerState, ctrlEpochOf, seenCtrlEpoch, log, hw, lisr, lastWrite, committed, faults>>

Next ==
    \/ \E b \in Brokers :
          \/ StartBroker(b)
          \/ CrashBroker(b)
          \/ PauseBroker(b)
          \/ ResumeBroker(b)
          \/ ExpireSession(b)
          \/ ElectController(b)
          \/ ElectLeader(b)
          \/ LeaderAndIsr(b)
          \/ Produce(b)
          \/ Replicate(b)
          \/ AdvanceHighWatermark(b)
          \/ StepDown(b)
          \/ \E f \in Brokers : ShrinkIsr(b, f) \/ ExpandIsr(b, f)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* The invariants, named as in spec/isr-versioned-writes.md and reference/replication. *)

Epochs == -1..MaxLeaderEpoch
Views == [leader : Brokers \cup {None}, leaderEpoch : Epochs, isr : SUBSET Brokers,
          controllerEpoch : 0..MaxControllerEpoch, zkVersion : -1..MaxVersion]

TypeOK ==
    /\ controller \in Brokers \cup {None}
    /\ controllerEpoch \in 0..MaxControllerEpoch
    /\ session \in [Brokers -> BOOLEAN]
    /\ partState \in [leader : Brokers \cup {None}, leaderEpoch : 0..MaxLeaderEpoch, isr : SUBSET Brokers,
                      controllerEpoch : 0..MaxControllerEpoch]
    /\ partState.isr /= {}
    /\ zkVersion \in 0..MaxVersion
    /\ brokerState \in [Brokers -> {"up", "paused", "down"}]
    /\ ctrlEpochOf \in [Brokers -> 0..MaxControllerEpoch]
    /\ seenCtrlEpoch \in [Brokers -> 0..MaxControllerEpoch]
    /\ view \in [Brokers -> Views]
    /\ fetched \in [Brokers -> BOOLEAN]
    /\ \A b \in Brokers : log[b] \in Seq(1..MaxLeaderEpoch) /\ Len(log[b]) <= MaxRecords
    /\ hw \in [Brokers -> 0..MaxRecords]
    /\ lisr \subseteq [controllerEpoch : 1..MaxControllerEpoch, partition : Views]
    /\ committed \subseteq (1..MaxRecords) \X (1..MaxLeaderEpoch)
    /\ faults \in 0..MaxFaults

(* Every partition-state write the store accepted was conditional on the zk_version   *)
(* current at that moment.                                                              *)
NoWriteWithStaleVersion == lastWrite.expected = lastWrite.before

(* A published leader is a member of the published ISR. *)
LeaderInIsr == partState.leader /= None => partState.leader \in partState.isr

(* A broker can commit when it runs, believes it leads, and every other member of the *)
(* ISR it holds fetches from it at its leader epoch (so its HW can advance).          *)
CanCommit(b) == Leads(b) /\ \A m \in view[b].isr \ {b} : FollowsAtEpoch(m, b)

AtMostOneLeaderCanCommit == \A a, b \in Brokers : CanCommit(a) /\ CanCommit(b) => a = b

(* Every acknowledged record is in the published leader's log, at its offset, once   *)
(* that leader has taken up leadership (applied the published leader epoch).          *)
NoCommittedRecordLost ==
    LET L == partState.leader IN
    (L /= None /\ view[L].leader = L /\ view[L].leaderEpoch = partState.leaderEpoch) =>
        \A rec \in committed : rec[1] <= Len(log[L]) /\ log[L][rec[1]] = rec[2]

(* /controller_epoch never decreases; a partition state is never overwritten by a     *)
(* controller older than the one that wrote it; and no partition state carries a      *)
(* controller epoch above /controller_epoch. An action property.                       *)
ControllerEpochMonotonic ==
    [][/\ controllerEpoch' >= controllerEpoch
       /\ partState'.controllerEpoch >= partState.controllerEpoch
       /\ partState'.controllerEpoch <= controllerEpoch']_vars

=============================================================================
