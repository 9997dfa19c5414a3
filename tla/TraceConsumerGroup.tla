-------------------------- MODULE TraceConsumerGroup --------------------------
(***************************************************************************)
(* Spec check of ConsumerGroup (conformance/formal/consumer_group.py), as   *)
(* TraceGroupMembership: TraceData defines Traces, each a sequence of       *)
(* records of the base spec's fifteen variables after a step of the         *)
(* reference, plus the step's action, actor, sub and delivered. Each step   *)
(* is the labelled action of the base spec and lands exactly on the next    *)
(* record; a finished trace stutters, so with deadlock checking on TLC      *)
(* reports a deadlock exactly where a trace cannot be continued.            *)
(***************************************************************************)
EXTENDS ConsumerGroup, Sequences, TLC, TraceData

VARIABLES t, i

Matches(r) ==
    /\ group_epoch = r.group_epoch /\ members = r.members /\ subscription = r.subscription
    /\ member_epoch = r.member_epoch /\ previous_member_epoch = r.previous_member_epoch
    /\ member_state = r.member_state /\ assigned = r.assigned
    /\ pending_revocation = r.pending_revocation /\ target_assignment = r.target_assignment
    /\ assignment_epoch = r.assignment_epoch /\ client_epoch = r.client_epoch
    /\ client_subscription = r.client_subscription /\ owned = r.owned
    /\ acked_commit = r.acked_commit /\ lost = r.lost

MatchesNext(r) ==
    /\ group_epoch' = r.group_epoch /\ members' = r.members /\ subscription' = r.subscription
    /\ member_epoch' = r.member_epoch /\ previous_member_epoch' = r.previous_member_epoch
    /\ member_state' = r.member_state /\ assigned' = r.assigned
    /\ pending_revocation' = r.pending_revocation /\ target_assignment' = r.target_assignment
    /\ assignment_epoch' = r.assignment_epoch /\ client_epoch' = r.client_epoch
    /\ client_subscription' = r.client_subscription /\ owned' = r.owned
    /\ acked_commit' = r.acked_commit /\ lost' = r.lost

(* The base action the trace names for this step. *)
Step(r) ==
    CASE r.action = "ConsumerGroupHeartbeat" -> ConsumerGroupHeartbeat(r.actor, r.sub, r.delivered)
      [] r.action = "Subscribe"              -> Subscribe(r.actor, r.sub)
      [] r.action = "LeaveGroup"             -> LeaveGroup(r.actor)
      [] r.action = "StaticLeave"            -> StaticLeave(r.actor)
      [] r.action = "SessionTimeout"         -> SessionTimeout(r.actor)
      [] r.action = "RebalanceTimeout"       -> RebalanceTimeout(r.actor)
      [] r.action = "OffsetCommit"           -> OffsetCommit(r.actor)
      \* a commit the coordinator refused: the spec must not acknowledge it either
      [] r.action = "OffsetCommitRejected"   -> /\ ~ENABLED OffsetCommit(r.actor)
                                                /\ UNCHANGED vars
      [] OTHER                               -> FALSE

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
