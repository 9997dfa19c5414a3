--------------------------- MODULE SimConsumerGroup ---------------------------
(* Random behaviours of ConsumerGroup for replay on the reference                               *)
(* (conformance/formal/consumer_group.py). As SimGroupMembership: one simulation run yields     *)
(* Count behaviours of at most Depth steps; Restart puts the base variables back to Init after  *)
(* Depth steps or when nothing is enabled (act = "Init" marks where the next behaviour starts), *)
(* and the invariant Done fails once Count behaviours are complete. act names each step's       *)
(* action and parameters; the target a heartbeat chose is in target_assignment. Each action    *)
(* and parameter is a disjunct of SimNext of its own, so that TLC's simulator, which picks an   *)
(* action at random, computes only that action's successors.                                    *)
(* One constraint, not a safety rule: a process outside the group commits (epoch -1) only once  *)
(* the group exists (group_epoch > 0): the reference, as Kafka, makes a commit to an unknown    *)
(* group id a classic group, which the spec does not model.                                     *)
EXTENDS ConsumerGroup
CONSTANTS Depth, Count
VARIABLES k, b, act

NoSub == {}
Act(name, m, sub, d) ==
    /\ act' = [action |-> name, actor |-> m, sub |-> sub, delivered |-> d]
    /\ k' = k + 1
    /\ b' = b

SimInit ==
    /\ Init
    /\ k = 0
    /\ b = 0
    /\ act = [action |-> "Init", actor |-> "none", sub |-> NoSub, delivered |-> TRUE]

CommitAllowed(m) == client_epoch[m] >= 0 \/ group_epoch > 0

Base ==
    \E m \in Members :
        \/ \E sub \in Subscriptions, d \in BOOLEAN : ConsumerGroupHeartbeat(m, sub, d)
        \/ \E sub \in Subscriptions : Subscribe(m, sub)
        \/ LeaveGroup(m) \/ StaticLeave(m) \/ SessionTimeout(m) \/ RebalanceTimeout(m)
        \/ CommitAllowed(m) /\ OffsetCommit(m)

Restart ==
    /\ k = Depth \/ ~ENABLED Base
    /\ group_epoch' = 0 /\ members' = {} /\ subscription' = [m \in Members |-> {}]
    /\ member_epoch' = NoMember /\ previous_member_epoch' = NoMember
    /\ member_state' = [m \in Members |-> STABLE] /\ assigned' = NoPartitions
    /\ pending_revocation' = NoPartitions /\ target_assignment' = NoPartitions
    /\ assignment_epoch' = 0 /\ client_epoch' = [m \in Members |-> LeaveEpoch]
    /\ client_subscription' = [m \in Members |-> {}] /\ owned' = NoPartitions
    /\ acked_commit' = NoCommit /\ lost' = 0
    /\ act' = [action |-> "Init", actor |-> "none", sub |-> NoSub, delivered |-> TRUE]
    /\ k' = 0
    /\ b' = b + 1

SimNext ==
    \/ \E m \in Members, sub \in Subscriptions, d \in BOOLEAN :
          /\ k < Depth
          /\ ConsumerGroupHeartbeat(m, sub, d)
          /\ Act("ConsumerGroupHeartbeat", m, sub, d)
    \/ \E m \in Members, sub \in Subscriptions :
          k < Depth /\ Subscribe(m, sub) /\ Act("Subscribe", m, sub, TRUE)
    \/ \E m \in Members : k < Depth /\ LeaveGroup(m) /\ Act("LeaveGroup", m, NoSub, TRUE)
    \/ \E m \in Members : k < Depth /\ StaticLeave(m) /\ Act("StaticLeave", m, NoSub, TRUE)
    \/ \E m \in Members :
          k < Depth /\ SessionTimeout(m) /\ Act("SessionTimeout", m, NoSub, TRUE)
    \/ \E m \in Members :
          k < Depth /\ RebalanceTimeout(m) /\ Act("RebalanceTimeout", m, NoSub, TRUE)
    \/ \E m \in Members :
          k < Depth /\ CommitAllowed(m) /\ OffsetCommit(m) /\ Act("OffsetCommit", m, NoSub, TRUE)
    \/ Restart

Done == b < Count
=============================================================================
