------------------------- MODULE CoordinatorFailover -------------------------
(***************************************************************************)
(* A group's coordinator is the leader of the group's __consumer_offsets   *)
(* partition. This module models one offsets partition replicated on        *)
(* Brokers, leadership of it moving between them, and one group served by   *)
(* whichever broker believes it leads, as spec/coordinator-failover.md      *)
(* states it. Action and invariant names are those of the shared            *)
(* vocabulary (reference/failover, spec/coordinator-failover.md).           *)
(*                                                                           *)
(* The three layers:                                                         *)
(*  - the controller's published partition state (leader, leaderEpoch, isr), *)
(*    changed by ElectLeader, and by the leader's ExpandIsr;                 *)
(*  - each broker's replica: its log of group-metadata and offset-commit     *)
(*    records, its high watermark, and the partition state it has learned    *)
(*    (view). A broker learns the published state when it applies           *)
(*    LeaderAndIsr (BecomeCoordinator / ResignCoordinator), at any later     *)
(*    moment: a broker that has not learned yet is a zombie (a GC pause, a   *)
(*    slow controller channel) and acts on its old view;                     *)
(*  - each broker's group coordinator: NotCoordinator, Loading or Active,    *)
(*    and its in-memory state of the group (generation, committed offsets). *)
(*                                                                           *)
(* Group requests are abstracted to what carries generations: SyncGroup is  *)
(* a completed rebalance (the generation goes up by one and a group-metadata *)
(* record is written), OffsetCommit is fenced by the generation the members  *)
(* were acknowledged and writes an offset record. Responses wait until the  *)
(* record is committed (AckCommit).                                          *)
(*                                                                           *)
(* Follows Kafka 4.0's CoordinatorRuntime (scheduleLoadOperation,            *)
(* scheduleUnloadOperation, the LOADING/ACTIVE states, the deferred event    *)
(* queue completed by the high watermark) and, for 2.x, GroupMetadataManager *)
(* (scheduleLoadGroupAndOffsets reading to the log end, removeGroupsForPartition, *)
(* appends with offsets.commit.required.acks = -1).                          *)
(*                                                                           *)
(* Left out: several groups and several offsets partitions (groups do not   *)
(* interact across partitions), broker crashes that lose unflushed data,    *)
(* the leader shrinking its ISR (IsrVersionedWrites models it), member-level *)
(* rebalance detail (GroupMembership models it), tombstones and expiry.     *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    Brokers,        \* the replicas of the offsets partition
    TopicPartitions, \* the topic partitions the group consumes and commits offsets for
    MaxEpoch,       \* bound: leader elections
    MaxGeneration,  \* bound: rebalances
    MaxCommits,     \* bound: OffsetCommits accepted
    \* Mutant flags: each, when TRUE, breaks one rule (tla/README.md lists them).
    BugServeBeforeLoad,       \* a Loading coordinator answers group requests
    BugOffsetCommitAcksOne,   \* OffsetCommit answered at the leader's append (acks=1)
    BugSyncGroupAcksOne,      \* SyncGroup answered at the leader's append (acks=1)
    BugNoEpochBump,           \* leadership moves without a new leader epoch
    BugLoadToHighWatermark,   \* LoadGroup replays the log only up to the local high watermark
    BugUncleanElection,       \* a replica outside the ISR may be elected
    BugExpandIsrAtHighWatermark \* ExpandIsr admits a follower that only reached the leader's high watermark

None == "none"
CoordinatorStates == {"NotCoordinator", "Loading", "Active"}

VARIABLES
    leader,         \* published (ZooKeeper partition state): the leader, or None
    leaderEpoch,    \* published: the leader epoch, 0 before the first election
    isr,            \* published: the in-sync replicas
    view,           \* [Brokers -> [leader, epoch, isr]]: the partition state each broker applied
    log,            \* [Brokers -> Seq(Record)]: each replica's log
    hw,             \* [Brokers -> Nat]: each replica's high watermark (records below it are committed)
    status,         \* [Brokers -> CoordinatorStates]: each broker's coordinator for the group
    cache,          \* [Brokers -> Group]: the coordinator's in-memory group (generation, offsets)
    pending,        \* set of [broker, index]: writes whose response waits for the record to commit
    ackedGen,       \* the highest generation acknowledged to members (SyncGroup answered)
    acked,          \* [TopicPartitions -> Nat]: the last acknowledged offset per partition (0: none)
    commits,        \* OffsetCommits accepted so far: the next commit writes offset commits + 1
    answeredLoaded  \* history: whether the last group request answered came from a loaded coordinator

vars == <<leader, leaderEpoch, isr, view, log, hw, status, cache, pending, ackedGen, acked, commits,
          answeredLoaded>>

Epochs == 0..MaxEpoch
Generations == 0..MaxGeneration
Offsets == 0..MaxCommits

(* Records carry the leader epoch they were written in, as Kafka's record batches do:   *)
(* followers find where their log diverges from the leader's by it (KIP-101/279).      *)
(* A group-metadata record carries the generation, an offset-commit record the         *)
(* partition and the offset (unused fields hold None / 0).                               *)
GroupRecords == [kind: {"group"}, epoch: 1..MaxEpoch, gen: 1..MaxGeneration, partition: {None}, offset: {0}]
OffsetRecords == [kind: {"offset"}, epoch: 1..MaxEpoch, gen: {0}, partition: TopicPartitions, offset: 1..MaxCommits]
Records == GroupRecords \cup OffsetRecords

EmptyGroup == [gen |-> 0, offsets |-> [p \in TopicPartitions |-> 0]]
NoView == [leader |-> None, epoch |-> 0, isr |-> {}]

Min(a, b) == IF a <= b THEN a ELSE b
Max(a, b) == IF a >= b THEN a ELSE b
SetMin(S) == CHOOSE x \in S : \A y \in S : x <= y

(* Replaying a log from its start: the last group-metadata record gives the generation, *)
(* the last offset-commit record per partition its offset (reference/group/loader.py).  *)
Apply(g, r) ==
    IF r.kind = "group" THEN [g EXCEPT !.gen = r.gen]
                        ELSE [g EXCEPT !.offsets[r.partition] = r.offset]
RECURSIVE ReplayFrom(_, _)
ReplayFrom(g, s) == IF s = <<>> THEN g ELSE ReplayFrom(Apply(g, Head(s)), Tail(s))
Replay(s) == ReplayFrom(EmptyGroup, s)

IsPrefix(s, t) == Len(s) <= Len(t) /\ SubSeq(t, 1, Len(s)) = s
CommonPrefixLen(s, t) ==
    CHOOSE k \in 0..Min(Len(s), Len(t)) :
        /\ \A i \in 1..k : s[i] = t[i]
        /\ (k = Min(Len(s), Len(t)) \/ s[k + 1] /= t[k + 1])

LeadsInView(b) == view[b].leader = b
(* A coordinator that answers group requests. *)
Serves(b) ==
    /\ LeadsInView(b)
    /\ \/ status[b] = "Active"
       \/ BugServeBeforeLoad /\ status[b] = "Loading"

Init ==
    /\ leader = None
    /\ leaderEpoch = 0
    /\ isr = Brokers
    /\ view = [b \in Brokers |-> NoView]
    /\ log = [b \in Brokers |-> <<>>]
    /\ hw = [b \in Brokers |-> 0]
    /\ status = [b \in Brokers |-> "NotCoordinator"]
    /\ cache = [b \in Brokers |-> EmptyGroup]
    /\ pending = {}
    /\ ackedGen = 0
    /\ acked = [p \in TopicPartitions |-> 0]
    /\ commits = 0
    /\ answeredLoaded = TRUE

-----------------------------------------------------------------------------
(* The controller.                                                          *)

(* ElectLeader: the controller decides a new leader and ISR for the offsets partition  *)
(* and bumps the leader epoch (Kafka 2.6, ZooKeeper mode). When a broker's session      *)
(* expires it drops out of the ISR: if it led, another ISR member is elected             *)
(* (OfflinePartitionLeaderElection), otherwise the leader stays with a smaller ISR; a   *)
(* preferred or controlled election moves leadership and keeps the ISR. The new leader  *)
(* comes from the ISR (a clean election), so it holds every committed record; the new   *)
(* epoch fences every broker still acting on an older one. The mutant elects a replica  *)
(* outside the ISR (unclean.leader.election.enable) with an ISR of itself alone.        *)
ElectLeader(l) ==
    /\ leaderEpoch < MaxEpoch
    /\ \/ /\ l \in isr
          /\ \E newIsr \in {isr} \cup {isr \ {x} : x \in isr \ {l}} :
                /\ l /= leader \/ newIsr /= isr
                /\ isr' = newIsr
       \/ /\ BugUncleanElection
          /\ l \notin isr
          /\ isr' = {l}
    /\ leader' = l
    /\ leaderEpoch' = IF BugNoEpochBump /\ leaderEpoch > 0 THEN leaderEpoch ELSE leaderEpoch + 1
    /\ UNCHANGED <<view, log, hw, status, cache, pending, ackedGen, acked, commits, answeredLoaded>>

-----------------------------------------------------------------------------
(* A broker applies the published partition state (LeaderAndIsr).            *)

(* Kafka applies a LeaderAndIsr only if its leader epoch is newer than the one the      *)
(* replica has. The mutant without epoch bumps also accepts a new leader at an equal    *)
(* epoch, or nobody would ever learn of a move.                                          *)
Newer(b) ==
    \/ leaderEpoch > view[b].epoch
    \/ BugNoEpochBump /\ leaderEpoch = view[b].epoch /\ leader /= view[b].leader

(* BecomeCoordinator: b learns that it leads. Kafka 4.0: scheduleLoadOperation(tp, epoch) *)
(* moves the coordinator from INITIAL/FAILED to LOADING with a fresh, empty state        *)
(* machine; every request is answered COORDINATOR_LOAD_IN_PROGRESS until the load        *)
(* completes. A coordinator already ACTIVE (re-elected before it learned it had lost     *)
(* leadership) keeps its state and stays active, as 4.0 does ("already active"; the     *)
(* reference too): its log has not changed meanwhile, and TLC checks that this is safe.  *)
(* A leader keeps its log and high watermark; pending writes stay deferred.              *)
BecomeCoordinator(b) ==
    /\ leader = b
    /\ Newer(b)
    /\ view' = [view EXCEPT ![b] = [leader |-> b, epoch |-> leaderEpoch, isr |-> isr]]
    /\ IF status[b] = "Active"
          THEN UNCHANGED <<status, cache>>
          ELSE /\ status' = [status EXCEPT ![b] = "Loading"]
               /\ cache' = [cache EXCEPT ![b] = EmptyGroup]
    /\ UNCHANGED <<leader, leaderEpoch, isr, log, hw, pending, ackedGen, acked, commits, answeredLoaded>>

(* LoadGroup: loading completes. Kafka 4.0: the CoordinatorLoader replays the partition  *)
(* from its start to its log end into the state machine, then CompleteLoad moves it to  *)
(* ACTIVE; 2.x doLoadGroupsAndOffsets reads up to the log end offset as well. The log   *)
(* end, not the high watermark: a new leader's high watermark can lag records the old   *)
(* leader already committed and acknowledged (spec/coordinator-failover.md: LoadGroup). *)
LoadGroup(b) ==
    /\ status[b] = "Loading"
    /\ status' = [status EXCEPT ![b] = "Active"]
    /\ cache' = [cache EXCEPT ![b] =
                    Replay(IF BugLoadToHighWatermark THEN SubSeq(log[b], 1, hw[b]) ELSE log[b])]
    /\ UNCHANGED <<leader, leaderEpoch, isr, view, log, hw, pending, ackedGen, acked, commits, answeredLoaded>>

(* ResignCoordinator: b learns that another broker leads. Kafka 4.0:                   *)
(* scheduleUnloadOperation closes the coordinator and fails every deferred write with   *)
(* NOT_COORDINATOR; 2.x removeGroupsForPartition. The replica becomes a follower of the *)
(* new leader; it truncates when it first fetches (Replicate).                          *)
ResignCoordinator(b) ==
    /\ leader /= b
    /\ leader /= None
    /\ Newer(b)
    /\ view' = [view EXCEPT ![b] = [leader |-> leader, epoch |-> leaderEpoch, isr |-> {}]]
    /\ status' = [status EXCEPT ![b] = "NotCoordinator"]
    /\ cache' = [cache EXCEPT ![b] = EmptyGroup]
    /\ pending' = {w \in pending : w.broker /= b}
    /\ UNCHANGED <<leader, leaderEpoch, isr, log, hw, ackedGen, acked, commits, answeredLoaded>>

-----------------------------------------------------------------------------
(* Group requests, answered by a broker that serves the group; any other     *)
(* broker answers COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR, which      *)
(* changes nothing. A write appends to the coordinator's own log at once and  *)
(* is answered by AckCommit once committed (acks=-1; in 4.0 the append is     *)
(* acks=1 and the response is deferred until the high watermark passes it).  *)
(* The mutants answer at the append instead.                                 *)

Write(b, r, answeredAtAppend) ==
    /\ log' = [log EXCEPT ![b] = Append(@, r)]
    /\ pending' = IF answeredAtAppend THEN pending
                  ELSE pending \cup {[broker |-> b, index |-> Len(log[b]) + 1]}

(* SyncGroup: a rebalance completes. In Kafka the join phase bumps the generation and  *)
(* the leader's SyncGroup stores the group (a GroupMetadata record); members learn the  *)
(* generation is stable only when that write is committed (2.x storeGroup's callback,   *)
(* 4.0's deferred response). One step here for both.                                   *)
SyncGroup(b) ==
    /\ Serves(b)
    /\ cache[b].gen < MaxGeneration
    /\ LET g == cache[b].gen + 1
           r == [kind |-> "group", epoch |-> view[b].epoch, gen |-> g, partition |-> None, offset |-> 0]
       IN /\ Write(b, r, BugSyncGroupAcksOne)
          /\ ackedGen' = IF BugSyncGroupAcksOne THEN Max(ackedGen, g) ELSE ackedGen
          /\ cache' = [cache EXCEPT ![b].gen = g]
    /\ answeredLoaded' = (status[b] = "Active")
    /\ UNCHANGED <<leader, leaderEpoch, isr, view, hw, status, acked, commits>>

(* OffsetCommit: a member of the acknowledged generation commits offset commits + 1 for  *)
(* p. Fenced by generation: ILLEGAL_GENERATION (or REBALANCE_IN_PROGRESS) unless the     *)
(* coordinator's generation is the member's. The accepted commit is visible in memory    *)
(* at once and answered when its record commits; the mutant answers at the append.     *)
OffsetCommit(b, p) ==
    /\ Serves(b)
    /\ ackedGen >= 1
    /\ commits < MaxCommits
    /\ answeredLoaded' = (status[b] = "Active")
    /\ IF cache[b].gen = ackedGen
          THEN LET r == [kind |-> "offset", epoch |-> view[b].epoch, gen |-> 0,
                         partition |-> p, offset |-> commits + 1]
               IN /\ Write(b, r, BugOffsetCommitAcksOne)
                  /\ acked' = IF BugOffsetCommitAcksOne THEN [acked EXCEPT ![p] = Max(@, r.offset)] ELSE acked
                  /\ cache' = [cache EXCEPT ![b].offsets[p] = r.offset]
                  /\ commits' = commits + 1
          ELSE UNCHANGED <<log, pending, acked, cache, commits>>        \* ILLEGAL_GENERATION
    /\ UNCHANGED <<leader, leaderEpoch, isr, view, hw, status, ackedGen>>

(* AckCommit: the high watermark passed a deferred write; its response goes out (Kafka   *)
(* 4.0: the deferred event queue completes events up to the committed offset, in offset *)
(* order). A SyncGroup response tells members the generation; an OffsetCommit response  *)
(* acknowledges the offset. A coordinator that resigned first failed them instead.      *)
AckCommit(b) ==
    /\ status[b] = "Active"
    /\ \E w \in pending : w.broker = b
    /\ LET i == SetMin({w.index : w \in {v \in pending : v.broker = b}})
           r == log[b][i]
       IN /\ i <= hw[b]
          /\ pending' = pending \ {[broker |-> b, index |-> i]}
          /\ IF r.kind = "group"
                THEN /\ ackedGen' = Max(ackedGen, r.gen)
                     /\ UNCHANGED acked
                ELSE /\ acked' = [acked EXCEPT ![r.partition] = Max(@, r.offset)]
                     /\ UNCHANGED ackedGen
    /\ UNCHANGED <<leader, leaderEpoch, isr, view, log, hw, status, cache, commits, answeredLoaded>>

-----------------------------------------------------------------------------
(* Replication (the part of Kafka's ISR protocol this spec needs).            *)

(* Replicate: follower f fetches from the broker it believes leads, at the epoch it      *)
(* knows; the leader rejects a fetch at another epoch (FENCED/UNKNOWN_LEADER_EPOCH), so  *)
(* nobody fetches from a zombie once it has learned of the new epoch. The follower first *)
(* truncates to where its log diverges from the leader's (leader-epoch truncation,      *)
(* KIP-101/279), then takes some of the leader's next records (as many as the fetch's   *)
(* size limit allows), and the leader's high watermark up to its own log end.           *)
Replicate(f) ==
    LET l == view[f].leader
    IN /\ l /= None
       /\ l /= f
       /\ view[l].leader = l
       /\ view[l].epoch = view[f].epoch
       /\ LET k == CommonPrefixLen(log[f], log[l])
          IN \E n \in Min(k + 1, Len(log[l]))..Len(log[l]) :
                LET newLog == SubSeq(log[l], 1, n)
                IN /\ log' = [log EXCEPT ![f] = newLog]
                   /\ hw' = [hw EXCEPT ![f] = Min(hw[l], n)]
                   /\ <<log', hw'>> /= <<log, hw>>
       /\ UNCHANGED <<leader, leaderEpoch, isr, view, status, cache, pending, ackedGen, acked, commits,
                      answeredLoaded>>

(* The ISR members that fetch from l at l's epoch, with logs that match l's. *)
FollowsAtEpoch(f, l) == view[f].leader = l /\ view[f].epoch = view[l].epoch
CaughtUpFollower(f, l) == FollowsAtEpoch(f, l) /\ IsPrefix(log[f], log[l])

(* AdvanceHighWatermark: a leader moves its high watermark to the smallest log end among *)
(* the ISR it holds, once every member fetches from it at its epoch: records below are  *)
(* on every ISR member and committed (Kafka: Partition.maybeIncrementLeaderHW).           *)
AdvanceHighWatermark(l) ==
    /\ LeadsInView(l)
    /\ \A f \in view[l].isr \ {l} : CaughtUpFollower(f, l)
    /\ LET h == SetMin({Len(log[f]) : f \in view[l].isr})
       IN /\ h > hw[l]
          /\ hw' = [hw EXCEPT ![l] = h]
    /\ UNCHANGED <<leader, leaderEpoch, isr, view, log, status, cache, pending, ackedGen, acked, commits,
                   answeredLoaded>>

(* The offset at which l's epoch started: its log end when it became leader. Records  *)
(* are in epoch order, so it is the number of records from older epochs.              *)
EpochStartOffset(l) == Len(SelectSeq(log[l], LAMBDA r : r.epoch < view[l].epoch))

(* ExpandIsr: the leader adds a follower that fetches from it at its epoch and has     *)
(* caught up (Kafka 2.6 Partition.isFollowerInSync: its log end has reached both the    *)
(* leader's high watermark and the start offset of the leader's epoch), by a ZooKeeper *)
(* write conditional on the partition state version it holds: only the leader the      *)
(* controller published at the current epoch succeeds, so a zombie cannot change the   *)
(* ISR, and the epoch stays. The epoch start matters: a new leader's high watermark    *)
(* can lag what the old leader committed, and a follower that only reached it may lack *)
(* acknowledged records; TLC finds that (mutant BugExpandIsrAtHighWatermark), the bug   *)
(* KIP-320's work fixed. Shrinking for lag is left to the controller's ElectLeader     *)
(* here; tla/IsrVersionedWrites.tla models both directions.                            *)
ExpandIsr(l, f) ==
    /\ leader = l
    /\ LeadsInView(l)
    /\ view[l].epoch = leaderEpoch
    /\ f \notin isr
    /\ CaughtUpFollower(f, l)
    /\ Len(log[f]) >= hw[l]
    /\ BugExpandIsrAtHighWatermark \/ Len(log[f]) >= EpochStartOffset(l)
    /\ isr' = isr \cup {f}
    /\ view' = [view EXCEPT ![l].isr = @ \cup {f}]
    /\ UNCHANGED <<leader, leaderEpoch, log, hw, status, cache, pending, ackedGen, acked, commits,
                   answeredLoaded>>

Next ==
    \/ \E l \in Brokers : ElectLeader(l)
    \/ \E b \in Brokers :
          \/ BecomeCoordinator(b)
          \/ LoadGroup(b)
          \/ ResignCoordinator(b)
          \/ SyncGroup(b)
          \/ \E p \in TopicPartitions : OffsetCommit(b, p)
          \/ AckCommit(b)
          \/ Replicate(b)
          \/ AdvanceHighWatermark(b)
          \/ \E f \in Brokers : ExpandIsr(b, f)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* The invariants (spec/coordinator-failover.md names each).                 *)

TypeOK ==
    /\ leader \in Brokers \cup {None}
    /\ leaderEpoch \in Epochs
    /\ isr \subseteq Brokers
    /\ \A b \in Brokers :
          /\ view[b].leader \in Brokers \cup {None}
          /\ view[b].epoch \in Epochs
          /\ view[b].isr \subseteq Brokers
          /\ log[b] \in Seq(Records)
          /\ hw[b] \in 0..Len(log[b])
          /\ status[b] \in CoordinatorStates
          /\ cache[b].gen \in Generations
          /\ cache[b].offsets \in [TopicPartitions -> Offsets]
    /\ \A w \in pending : w.broker \in Brokers /\ w.index \in 1..Len(log[w.broker])
    /\ ackedGen \in Generations
    /\ acked \in [TopicPartitions -> Offsets]
    /\ commits \in Offsets
    /\ answeredLoaded \in BOOLEAN

(* The coordinator clients reach now: it leads at the published epoch and has loaded.  *)
(* A zombie that has not learned of a newer epoch may still answer reads from its old   *)
(* state (as in Kafka, until LeaderAndIsr reaches it); the invariants below are about   *)
(* what it can make durable, and about the current coordinator.                        *)
Current(b) ==
    /\ status[b] = "Active"
    /\ leader = b
    /\ LeadsInView(b)
    /\ view[b].epoch = leaderEpoch

(* b can get a write committed: it serves, and every member of the ISR it holds fetches *)
(* from it at its epoch, so its high watermark can pass its own appends.               *)
CanCommit(b) ==
    /\ status[b] = "Active"
    /\ LeadsInView(b)
    /\ \A f \in view[b].isr \ {b} : FollowsAtEpoch(f, b)

(* SingleActiveCoordinator: no two active coordinators share a leader epoch, and at most  *)
(* one active coordinator can get a write committed. A zombie may still serve at an old *)
(* epoch, but the new leader is in the ISR it holds and no longer fetches from it.      *)
(* Mutants: BugNoEpochBump (first half), BugUncleanElection (second half: the unclean   *)
(* leader commits alone while the zombie commits with followers still at its epoch).   *)
SingleActiveCoordinator ==
    /\ \A b1, b2 \in Brokers :
          (b1 /= b2 /\ status[b1] = "Active" /\ status[b2] = "Active"
                    /\ LeadsInView(b1) /\ LeadsInView(b2)) => view[b1].epoch /= view[b2].epoch
    /\ Cardinality({b \in Brokers : CanCommit(b)}) <= 1

(* NoCommittedOffsetLost: the current coordinator's offset for p (what OffsetFetch      *)
(* returns) is the acknowledged one or a later commit (offsets are numbered in commit   *)
(* order). Mutant: BugOffsetCommitAcksOne.                                              *)
NoCommittedOffsetLost ==
    \A b \in Brokers : Current(b) => \A p \in TopicPartitions : cache[b].offsets[p] >= acked[p]

(* LoadBeforeServe: every group request answered (other than with                      *)
(* COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR) came from a coordinator that had     *)
(* loaded since it last became leader. Mutant: BugServeBeforeLoad.                      *)
LoadBeforeServe == answeredLoaded

(* NoStaleGenerationAfterFailover: the current coordinator's generation is never below  *)
(* a generation acknowledged to members. Mutants: BugLoadToHighWatermark (the new      *)
(* leader's high watermark lags the acknowledged group record), BugSyncGroupAcksOne.    *)
NoStaleGenerationAfterFailover ==
    \A b \in Brokers : Current(b) => cache[b].gen >= ackedGen

=============================================================================
