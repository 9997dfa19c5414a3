------------------------- MODULE TraceGroupMembership -------------------------
(***************************************************************************)
(* Spec check of GroupMembership (conformance/formal/group.py).              *)
(*                                                                           *)
(* TraceData (generated next to this module) defines Traces, a sequence of  *)
(* traces recorded from the reference coordinator. Each trace is a sequence *)
(* of records: the base spec's thirteen variables as observed after a step, *)
(* plus the step's action, actor and withGeneration. The first record is    *)
(* the initial state.                                                        *)
(*                                                                           *)
(* Init picks a trace t and matches its first record; each step moves i to  *)
(* i + 1, is the labelled action of the base spec, and lands exactly on     *)
(* record i + 1. Each label names a disjunct of Next (or, for a refused     *)
(* commit, a stutter), so Step(r) implies [Next]_vars; conjoining Next as  *)
(* well only made TLC evaluate every step twice. A trace that reached       *)
(* its last record stutters there, so TLC, run with deadlock checking on,  *)
(* reports a deadlock exactly when some trace cannot be continued: a trace  *)
(* is accepted iff it is never stuck before its end. StartsInInit checks    *)
(* the first record against the base Init. No TLCGet, no ALIAS: standard   *)
(* modules only (TLC 2.15).                                                  *)
(***************************************************************************)
EXTENDS GroupMembership, Sequences, TLC, TraceData

VARIABLES t, i

Matches(r) ==
    /\ state = r.state /\ generation = r.generation /\ members = r.members
    /\ joined = r.joined /\ syncing = r.syncing /\ pendingSync = r.pendingSync
    /\ leader = r.leader /\ assignment = r.assignment /\ assignmentGen = r.assignmentGen
    /\ clientGen = r.clientGen /\ clientLeader = r.clientLeader
    /\ owners = r.owners /\ lastCommit = r.lastCommit

MatchesNext(r) ==
    /\ state' = r.state /\ generation' = r.generation /\ members' = r.members
    /\ joined' = r.joined /\ syncing' = r.syncing /\ pendingSync' = r.pendingSync
    /\ leader' = r.leader /\ assignment' = r.assignment /\ assignmentGen' = r.assignmentGen
    /\ clientGen' = r.clientGen /\ clientLeader' = r.clientLeader
    /\ owners' = r.owners /\ lastCommit' = r.lastCommit

(* The base action the trace names for this step. *)
Step(r) ==
    CASE r.action = "JoinGroup"            -> JoinGroup(r.actor)
      [] r.action = "JoinGroupAnswered"    -> JoinGroupAnswered(r.actor)
      [] r.action = "CompleteJoin"         -> CompleteJoin
      [] r.action = "SyncGroup"            -> SyncGroup(r.actor)
      [] r.action = "Heartbeat"            -> Heartbeat(r.actor)
      [] r.action = "LeaveGroup"           -> LeaveGroup(r.actor)
      [] r.action = "ExpireSession"        -> ExpireSession(r.actor)
      [] r.action = "ExpirePendingSync"    -> ExpirePendingSync
      [] r.action = "OffsetCommit"         -> OffsetCommit(r.actor, r.withGeneration)
      \* a commit the coordinator refused: the spec must not allow it either
      [] r.action = "OffsetCommitRejected" -> /\ ~ENABLED OffsetCommit(r.actor, r.withGeneration)
                                              /\ UNCHANGED vars
      [] r.action = "Crash"                -> Crash(r.actor)
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
