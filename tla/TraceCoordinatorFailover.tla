---------------------- MODULE TraceCoordinatorFailover ----------------------
(***************************************************************************)
(* Spec check of CoordinatorFailover (conformance/formal/failover.py).       *)
(*                                                                           *)
(* TraceData (generated next to this module) defines Traces, a sequence of  *)
(* traces recorded from the reference failover model (reference/failover on *)
(* the replication Cluster). Each trace is a sequence of records: the base  *)
(* spec's thirteen variables as mapped after a step, plus the step's action *)
(* and its parameters a1, a2. The first record is the initial state.       *)
(*                                                                           *)
(* As TraceGroupMembership: Init picks a trace tr and matches its first     *)
(* record; each step moves ix to ix + 1 by the base action the record names*)
(* (a disjunct of Next) and lands exactly on record i + 1; a trace at its   *)
(* end stutters. TLC runs with deadlock checking on, so a deadlock is a     *)
(* trace that cannot be continued, and no deadlock means every trace was    *)
(* matched to its end. OffsetCommitFenced is the spec's OffsetCommit that   *)
(* changes nothing (its ILLEGAL_GENERATION branch). StartsInInit checks the *)
(* first record against the base Init. Standard modules only (TLC 2.15).   *)
(* The trace variables are not t and i: TLC 2.15 resolves the base spec's  *)
(* LET i == ... in AckCommit to a variable i of this module when it        *)
(* generates successors (ENABLED still sees the LET).                      *)
(***************************************************************************)
EXTENDS CoordinatorFailover, Sequences, TLC, TraceData

VARIABLES tr, ix

Matches(r) ==
    /\ leader = r.leader /\ leaderEpoch = r.leaderEpoch /\ isr = r.isr /\ view = r.view
    /\ log = r.log /\ hw = r.hw /\ status = r.status /\ cache = r.cache /\ pending = r.pending
    /\ ackedGen = r.ackedGen /\ acked = r.acked /\ commits = r.commits /\ answeredLoaded = r.answeredLoaded

MatchesNext(r) ==
    /\ leader' = r.leader /\ leaderEpoch' = r.leaderEpoch /\ isr' = r.isr /\ view' = r.view
    /\ log' = r.log /\ hw' = r.hw /\ status' = r.status /\ cache' = r.cache /\ pending' = r.pending
    /\ ackedGen' = r.ackedGen /\ acked' = r.acked /\ commits' = r.commits /\ answeredLoaded' = r.answeredLoaded

(* The base action the trace names for this step. *)
Step(r) ==
    CASE r.action = "ElectLeader"          -> ElectLeader(r.a1)
      [] r.action = "BecomeCoordinator"    -> BecomeCoordinator(r.a1)
      [] r.action = "LoadGroup"            -> LoadGroup(r.a1)
      [] r.action = "ResignCoordinator"    -> ResignCoordinator(r.a1)
      [] r.action = "SyncGroup"            -> SyncGroup(r.a1)
      [] r.action = "OffsetCommit"         -> OffsetCommit(r.a1, r.a2)
      \* a commit the coordinator refused for its generation: the spec's fenced branch
      [] r.action = "OffsetCommitFenced"   -> OffsetCommit(r.a1, r.a2) /\ UNCHANGED vars
      [] r.action = "AckCommit"            -> AckCommit(r.a1)
      [] r.action = "Replicate"            -> Replicate(r.a1)
      [] r.action = "AdvanceHighWatermark" -> AdvanceHighWatermark(r.a1)
      [] r.action = "ExpandIsr"            -> ExpandIsr(r.a1, r.a2)
      [] OTHER                             -> FALSE

TraceInit ==
    /\ tr \in 1..Len(Traces)
    /\ ix = 1
    /\ Matches(Traces[tr][1])

TraceNext ==
    \/ /\ ix < Len(Traces[tr])
       /\ Step(Traces[tr][ix + 1])
       /\ MatchesNext(Traces[tr][ix + 1])
       /\ tr' = tr
       /\ ix' = ix + 1
    \/ /\ ix = Len(Traces[tr])
       /\ UNCHANGED <<vars, tr, ix>>

StartsInInit == ix = 1 => Init
=============================================================================
