-------------------------- MODULE SimGroupMembership --------------------------
(* Random behaviours of GroupMembership for replay on the reference (conformance/formal/group.py).  *)
(* One simulation run yields Count behaviours of Depth steps: after Depth steps, Restart puts  *)
(* the base variables back to Init (act = "Init" marks where the next behaviour starts); the  *)
(* invariant Done fails once Count behaviours are complete, and TLC prints the whole run.     *)
(* act names each step's action and parameters.                                              *)
(* One scheduling constraint, not a safety rule: the reference completes a join phase at once *)
(* when every member has rejoined, unless the phase began from Empty (the initial rebalance   *)
(* delay); the spec lets that wait, Eager forces CompleteJoin next. fromEmpty mirrors the     *)
(* reference's previous_state.                                                                 *)
EXTENDS GroupMembership
CONSTANTS Depth, Count
VARIABLES k, b, act, fromEmpty

Eager == state = "PreparingRebalance" /\ ~fromEmpty /\ members \subseteq joined
Act(name, c, wg) == act' = [action |-> name, actor |-> c, withGeneration |-> wg]

SimInit ==
    /\ Init
    /\ k = 0
    /\ b = 0
    /\ act = [action |-> "Init", actor |-> None, withGeneration |-> FALSE]
    /\ fromEmpty = FALSE

Base ==
    \/ \E c \in Clients :
          \/ JoinGroup(c) /\ Act("JoinGroup", c, FALSE)
          \/ JoinGroupAnswered(c) /\ Act("JoinGroupAnswered", c, FALSE)
          \/ SyncGroup(c) /\ Act("SyncGroup", c, FALSE)
          \/ Heartbeat(c) /\ Act("Heartbeat", c, FALSE)
          \/ LeaveGroup(c) /\ Act("LeaveGroup", c, FALSE)
          \/ ExpireSession(c) /\ Act("ExpireSession", c, FALSE)
          \/ OffsetCommit(c, TRUE) /\ Act("OffsetCommit", c, TRUE)
          \/ OffsetCommit(c, FALSE) /\ Act("OffsetCommit", c, FALSE)
          \/ Crash(c) /\ Act("Crash", c, FALSE)
    \/ CompleteJoin /\ Act("CompleteJoin", None, FALSE)
    \/ ExpirePendingSync /\ Act("ExpirePendingSync", None, FALSE)

Step ==
    /\ k < Depth
    /\ IF Eager THEN CompleteJoin /\ Act("CompleteJoin", None, FALSE) ELSE Base
    /\ fromEmpty' = IF state' = "PreparingRebalance"
                       THEN IF state = "PreparingRebalance" THEN fromEmpty ELSE state = "Empty"
                       ELSE FALSE
    /\ k' = k + 1
    /\ b' = b

Restart ==
    /\ k = Depth
    /\ state' = "Empty" /\ generation' = 0 /\ members' = {} /\ joined' = {} /\ syncing' = {}
    /\ pendingSync' = {} /\ leader' = None /\ assignment' = [c \in Clients |-> {}]
    /\ assignmentGen' = 0 /\ clientGen' = [c \in Clients |-> -1]
    /\ clientLeader' = [c \in Clients |-> FALSE] /\ owners' = NoOwners /\ lastCommit' = NoCommit
    /\ act' = [action |-> "Init", actor |-> None, withGeneration |-> FALSE]
    /\ fromEmpty' = FALSE
    /\ k' = 0
    /\ b' = b + 1

SimNext == Step \/ Restart

Done == b < Count
=============================================================================
