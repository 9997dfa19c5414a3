----------------------- MODULE TraceIsrVersionedWrites -----------------------
(***************************************************************************)
(* Spec check of IsrVersionedWrites (conformance/formal/isr.py).             *)
(*                                                                           *)
(* TraceData (generated next to this module) defines Traces, a sequence of  *)
(* traces recorded from the replication model (reference/replication).      *)
(* Each record holds the base spec's sixteen variables as observed after a  *)
(* step, the step's action, its actor and, for ShrinkIsr / ExpandIsr, the   *)
(* follower. The first record is the initial state.                          *)
(*                                                                           *)
(* As TraceGroupMembership: Init picks a trace t and matches its first      *)
(* record; each step moves i to i + 1 by the action the record names (a     *)
(* disjunct of the base Next) landing exactly on record i + 1; a trace at   *)
(* its end stutters. TLC runs with deadlock checking on, so a deadlock is a *)
(* record no step of the named action reaches. StartsInInit checks the      *)
(* first record against the base Init. Standard modules only (TLC 2.15).   *)
(***************************************************************************)
EXTENDS IsrVersionedWrites, Sequences, TLC, TraceData

VARIABLES t, i

Matches(r) ==
    /\ controller = r.controller /\ controllerEpoch = r.controllerEpoch /\ session = r.session
    /\ partState = r.partState /\ zkVersion = r.zkVersion /\ brokerState = r.brokerState
    /\ ctrlEpochOf = r.ctrlEpochOf /\ seenCtrlEpoch = r.seenCtrlEpoch /\ view = r.view
    /\ fetched = r.fetched /\ log = r.log /\ hw = r.hw /\ lisr = r.lisr
    /\ lastWrite = r.lastWrite /\ committed = r.committed /\ faults = r.faults

MatchesNext(r) ==
    /\ controller' = r.controller /\ controllerEpoch' = r.controllerEpoch /\ session' = r.session
    /\ partState' = r.partState /\ zkVersion' = r.zkVersion /\ brokerState' = r.brokerState
    /\ ctrlEpochOf' = r.ctrlEpochOf /\ seenCtrlEpoch' = r.seenCtrlEpoch /\ view' = r.view
    /\ fetched' = r.fetched /\ log' = r.log /\ hw' = r.hw /\ lisr' = r.lisr
    /\ lastWrite' = r.lastWrite /\ committed' = r.committed /\ faults' = r.faults

(* The base action the trace names for this step. *)
Step(r) ==
    CASE r.action = "StartBroker"          -> StartBroker(r.actor)
      [] r.action = "CrashBroker"          -> CrashBroker(r.actor)
      [] r.action = "PauseBroker"          -> PauseBroker(r.actor)
      [] r.action = "ResumeBroker"         -> ResumeBroker(r.actor)
      [] r.action = "ExpireSession"        -> ExpireSession(r.actor)
      [] r.action = "ElectController"      -> ElectController(r.actor)
      [] r.action = "ElectLeader"          -> ElectLeader(r.actor)
      [] r.action = "LeaderAndIsr"         -> LeaderAndIsr(r.actor)
      [] r.action = "Produce"              -> Produce(r.actor)
      [] r.action = "Replicate"            -> Replicate(r.actor)
      [] r.action = "AdvanceHighWatermark" -> AdvanceHighWatermark(r.actor)
      [] r.action = "StepDown"             -> StepDown(r.actor)
      [] r.action = "ShrinkIsr"            -> ShrinkIsr(r.actor, r.other)
      [] r.action = "ExpandIsr"            -> ExpandIsr(r.actor, r.other)
      [] OTHER                             -> FALSE

TraceInit ==
    /\ t \in 1..Len(Traces)
    /\ i = 1
    /\ Matches(Traces[t][1])

TraceNext ==
    \/ /\ i < Len(Traces[t])
       /\ Step(Traces[t][i + 1])
       /\ MatchesNext(Traces[t][i + 1])
       /\ t' = t
       /\ i' = i + 1
    \/ /\ i = Len(Traces[t])
       /\ UNCHANGED <<vars, t, i>>

StartsInInit == i = 1 => Init
=============================================================================
