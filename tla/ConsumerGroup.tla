---------------------------- MODULE ConsumerGroup ----------------------------
(***************************************************************************)
(* KIP-848 consumer groups (Kafka 4.0's group coordinator, read at trunk    *)
(* 1eb7644349cb): one group on one coordinator, and the consumer processes *)
(* that heartbeat it. The coordinator keeps a group epoch, a target         *)
(* assignment stamped with its epoch, and per member an epoch, a state and  *)
(* the partitions it is assigned or must revoke; each member reconciles     *)
(* towards its target through ConsumerGroupHeartbeat. A partition goes to   *)
(* its new owner only once no other member holds it at the coordinator.     *)
(* spec/consumer-group.md ("The TLA+ model") explains it rule by rule.      *)
(*                                                                           *)
(* Abstractions: a heartbeat is answered at once, or its answer is lost; a  *)
(* client applies an answer (revokes, then takes its new partitions) in the *)
(* step that delivers it; the assignor is any valid one (a nondeterministic *)
(* choice); timers fire at any moment; one process per member (a static     *)
(* member's restart is a leave with epoch -2 and a rejoin of the same id).  *)
(***************************************************************************)
EXTENDS Integers, FiniteSets

CONSTANTS
    Members,          \* member ids, one consumer process each
    StaticMembers,    \* the members with a group.instance.id
    Topics,
    PartitionsPerTopic,
    MaxGroupEpoch,    \* a bound: no new subscription, leave or timeout at or past it
    MaxLost,          \* a bound on heartbeat answers the network loses
    \* Mutant flags: each, when TRUE, breaks one rule (tla/README.md lists them).
    BugAssignUnreleased,
    BugEpochPerHeartbeat,
    BugCommitWithoutEpochCheck,
    BugNoBumpOnLeave

STABLE == "STABLE"
UNREVOKED == "UNREVOKED_PARTITIONS"
UNRELEASED == "UNRELEASED_PARTITIONS"
LeaveEpoch == -1
StaticLeaveEpoch == -2

Partitions == Topics \X (1..PartitionsPerTopic)
Topic(p) == p[1]
Subscriptions == SUBSET Topics \ {{}}

VARIABLES
    \* the coordinator
    group_epoch,
    members,                \* the member ids the group holds
    subscription,           \* [Members -> SUBSET Topics]: each member's subscribed topics
    member_epoch,           \* [Members -> Int]: -2 for a static member that left for a while
    previous_member_epoch,
    member_state,           \* STABLE, UNREVOKED_PARTITIONS or UNRELEASED_PARTITIONS
    assigned,               \* [Members -> SUBSET Partitions]: assignedPartitions
    pending_revocation,     \* [Members -> SUBSET Partitions]: partitionsPendingRevocation
    target_assignment,      \* [Members -> SUBSET Partitions]
    assignment_epoch,       \* the epoch of the target assignment
    \* the consumer processes
    client_epoch,           \* [Members -> Int]: -1 outside the group, 0 joining
    client_subscription,
    owned,                  \* [Members -> SUBSET Partitions]: what each process consumes
    \* history and bounds
    acked_commit,           \* the OffsetCommit acknowledged by the last step, or NoCommit
    lost                    \* heartbeat answers lost so far

coordinator == <<group_epoch, members, subscription, member_epoch, previous_member_epoch,
                 member_state, assigned, pending_revocation, target_assignment, assignment_epoch>>
clients == <<client_epoch, client_subscription, owned>>
vars == <<coordinator, clients, acked_commit, lost>>

NoCommit == [member |-> "none", sent_epoch |-> LeaveEpoch, member_epoch |-> LeaveEpoch,
             was_member |-> FALSE, group_empty |-> TRUE]
NoMember == [m \in Members |-> 0]
NoPartitions == [m \in Members |-> {}]

Init ==
    /\ group_epoch = 0
    /\ members = {}
    /\ subscription = [m \in Members |-> {}]
    /\ member_epoch = NoMember
    /\ previous_member_epoch = NoMember
    /\ member_state = [m \in Members |-> STABLE]
    /\ assigned = NoPartitions
    /\ pending_revocation = NoPartitions
    /\ target_assignment = NoPartitions
    /\ assignment_epoch = 0
    /\ client_epoch = [m \in Members |-> LeaveEpoch]
    /\ client_subscription = [m \in Members |-> {}]
    /\ owned = NoPartitions
    /\ acked_commit = NoCommit
    /\ lost = 0

-----------------------------------------------------------------------------
(* The target assignment: any valid one (TargetAssignmentBuilder with any    *)
(* assignor). Each partition of a subscribed topic goes to exactly one       *)
(* member subscribed to it; nothing else is assigned.                        *)
ValidTargets(M, sub) ==
    LET Owners(p) == {m \in M : Topic(p) \in sub[m]}
        Choices == {f \in [Partitions -> M \cup {"none"}] :
                        \A p \in Partitions :
                            IF Owners(p) = {} THEN f[p] = "none" ELSE f[p] \in Owners(p)}
    IN {[m \in Members |-> {p \in Partitions : f[p] = m}] : f \in Choices}

(* Partitions with a partition epoch (/= -1): held by another member, or still pending *)
(* revocation by m itself (Kafka counts those as unreleased too).                      *)
Held(m, M, A, R) == UNION {A[n] \cup R[n] : n \in M \ {m}} \cup R[m]

(* CurrentAssignmentBuilder.computeNextAssignment for member cur moving to epoch e, *)
(* whose process reported it owns o; free partitions of the target are taken at once. *)
NextAssignment(cur, e, o, target, tepoch, held) ==
    LET keep == cur.assigned \cap target
        revoke == cur.assigned \ keep
        wanted == target \ keep
        free == IF BugAssignUnreleased THEN wanted ELSE wanted \ held
        unreleased == wanted \ free
    IN IF revoke \cap o /= {}
          THEN [state |-> UNREVOKED, epoch |-> e, previous |-> cur.epoch,
                assigned |-> keep, pending |-> revoke]
          ELSE [state |-> IF unreleased /= {} THEN UNRELEASED ELSE STABLE, epoch |-> tepoch,
                previous |-> cur.epoch, assigned |-> keep \cup free, pending |-> {}]

(* CurrentAssignmentBuilder.build: the member's next state, or itself. *)
Reconciled(cur, o, target, tepoch, held) ==
    CASE cur.state = STABLE /\ cur.epoch = tepoch -> cur
      [] cur.state = STABLE -> NextAssignment(cur, cur.epoch, o, target, tepoch, held)
      [] cur.state = UNREVOKED /\ cur.pending \cap o /= {} -> cur
      [] cur.state = UNREVOKED -> NextAssignment(cur, cur.epoch + 1, o, target, tepoch, held)
      [] OTHER -> NextAssignment(cur, cur.epoch, o, target, tepoch, held)

-----------------------------------------------------------------------------
(* The error a ConsumerGroupHeartbeat from m with epoch e and owned partitions o gets. *)
EpochError(m, e, o) ==
    IF e > member_epoch[m] THEN "FENCED_MEMBER_EPOCH"
    \* an older epoch is accepted only as the one before, when the answer that moved it was lost
    ELSE IF e < member_epoch[m] /\ ~(e = previous_member_epoch[m] /\ o \subseteq assigned[m])
        THEN "FENCED_MEMBER_EPOCH"
    ELSE "NONE"

HeartbeatError(m, e, o) ==
    CASE e = 0 /\ m \notin members -> "NONE"
      [] e = 0 /\ m \in StaticMembers ->
            IF member_epoch[m] = StaticLeaveEpoch THEN "NONE" ELSE "UNRELEASED_INSTANCE_ID"
      [] m \notin members -> "UNKNOWN_MEMBER_ID"
      [] OTHER -> EpochError(m, e, o)

(* A member no process heartbeats: a static member away with epoch -2, or one whose *)
(* process is refused. Its session timeout is sure to fire.                          *)
Abandoned(m) ==
    /\ m \in members
    /\ \/ client_epoch[m] < 0
       \/ HeartbeatError(m, client_epoch[m], owned[m]) /= "NONE"

(* Removing a member (leave with -1, session or rebalance timeout): its partitions are *)
(* freed, its target is deleted and the group epoch is bumped.                         *)
RemoveMember(m) ==
    /\ members' = members \ {m}
    /\ group_epoch' = IF BugNoBumpOnLeave THEN group_epoch ELSE group_epoch + 1
    /\ subscription' = [subscription EXCEPT ![m] = {}]
    /\ member_epoch' = [member_epoch EXCEPT ![m] = 0]
    /\ previous_member_epoch' = [previous_member_epoch EXCEPT ![m] = 0]
    /\ member_state' = [member_state EXCEPT ![m] = STABLE]
    /\ assigned' = [assigned EXCEPT ![m] = {}]
    /\ pending_revocation' = [pending_revocation EXCEPT ![m] = {}]
    /\ target_assignment' = [target_assignment EXCEPT ![m] = {}]
    /\ UNCHANGED assignment_epoch

(* ConsumerGroupHeartbeat from m's process with subscription sub; its answer reaches *)
(* the process unless delivered is FALSE. A member epoch of 0 joins (or rejoins).    *)
ConsumerGroupHeartbeat(m, sub, delivered) ==
    LET e == client_epoch[m]
        o == owned[m]
        error == HeartbeatError(m, e, o)
    IN
    /\ e >= 0
    /\ delivered \/ lost < MaxLost
    /\ IF error /= "NONE"
       THEN /\ delivered
            /\ sub = client_subscription[m]
            /\ UNCHANGED <<coordinator, client_subscription, lost>>
            /\ acked_commit' = NoCommit
            /\ IF error = "UNRELEASED_INSTANCE_ID"
                  THEN UNCHANGED <<client_epoch, owned>>
                  \* FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID: give up every partition, rejoin
                  ELSE /\ client_epoch' = [client_epoch EXCEPT ![m] = 0]
                       /\ owned' = [owned EXCEPT ![m] = {}]
       ELSE
       LET joining == m \notin members
           \* a static member back from a temporary leave takes its old place at epoch 0
           cur == IF joining
                     THEN [state |-> STABLE, epoch |-> 0, previous |-> 0,
                           assigned |-> {}, pending |-> {}]
                  ELSE IF e = 0 /\ member_epoch[m] = StaticLeaveEpoch
                     THEN [state |-> member_state[m], epoch |-> 0, previous |-> 0,
                           assigned |-> assigned[m], pending |-> {}]
                  ELSE [state |-> member_state[m], epoch |-> member_epoch[m],
                        previous |-> previous_member_epoch[m], assigned |-> assigned[m],
                        pending |-> pending_revocation[m]]
           M == members \cup {m}
           sub2 == [subscription EXCEPT ![m] = sub]
           bump == joining \/ sub /= subscription[m]
           epoch2 == IF bump THEN group_epoch + 1 ELSE group_epoch
           recompute == epoch2 > assignment_epoch
           held == Held(m, M, assigned, pending_revocation)
       IN
       /\ sub /= client_subscription[m] => group_epoch < MaxGroupEpoch
       /\ members' = M
       /\ subscription' = sub2
       /\ group_epoch' = epoch2
       /\ assignment_epoch' = IF recompute THEN epoch2 ELSE assignment_epoch
       /\ \E target \in IF recompute THEN ValidTargets(M, sub2) ELSE {target_assignment} :
          LET next0 == Reconciled(cur, o, target[m], assignment_epoch', held)
              next == IF BugEpochPerHeartbeat /\ next0 = cur
                         THEN [cur EXCEPT !.epoch = cur.epoch + 1] ELSE next0
          IN
          /\ target_assignment' = target
          /\ member_state' = [member_state EXCEPT ![m] = next.state]
          /\ member_epoch' = [member_epoch EXCEPT ![m] = next.epoch]
          /\ previous_member_epoch' = [previous_member_epoch EXCEPT ![m] = next.previous]
          /\ assigned' = [assigned EXCEPT ![m] = next.assigned]
          /\ pending_revocation' = [pending_revocation EXCEPT ![m] = next.pending]
          /\ client_subscription' = [client_subscription EXCEPT ![m] = sub]
          /\ IF delivered
                THEN /\ client_epoch' = [client_epoch EXCEPT ![m] = next.epoch]
                     /\ owned' = [owned EXCEPT ![m] = next.assigned]
                     /\ UNCHANGED lost
                ELSE /\ UNCHANGED <<client_epoch, owned>>
                     /\ lost' = lost + 1
          /\ acked_commit' = NoCommit

(* A process outside the group decides to join with subscription sub. *)
Subscribe(m, sub) ==
    /\ client_epoch[m] = LeaveEpoch
    /\ group_epoch < MaxGroupEpoch
    /\ client_epoch' = [client_epoch EXCEPT ![m] = 0]
    /\ client_subscription' = [client_subscription EXCEPT ![m] = sub]
    /\ UNCHANGED <<coordinator, owned, lost>>
    /\ acked_commit' = NoCommit

(* The process leaves with epoch -1: the coordinator removes the member (no epoch check). *)
LeaveGroup(m) ==
    /\ client_epoch[m] > 0
    /\ group_epoch < MaxGroupEpoch
    /\ client_epoch' = [client_epoch EXCEPT ![m] = LeaveEpoch]
    /\ owned' = [owned EXCEPT ![m] = {}]
    /\ IF m \in members THEN RemoveMember(m) ELSE UNCHANGED coordinator
    /\ UNCHANGED <<client_subscription, lost>>
    /\ acked_commit' = NoCommit

(* A static member leaves with epoch -2: it keeps its place and its assigned partitions *)
(* until its session times out; the group epoch does not move.                          *)
StaticLeave(m) ==
    /\ m \in StaticMembers
    /\ client_epoch[m] > 0
    /\ client_epoch' = [client_epoch EXCEPT ![m] = LeaveEpoch]
    /\ owned' = [owned EXCEPT ![m] = {}]
    /\ IF m \in members
          THEN /\ member_epoch' = [member_epoch EXCEPT ![m] = StaticLeaveEpoch]
               /\ pending_revocation' = [pending_revocation EXCEPT ![m] = {}]
               /\ UNCHANGED <<group_epoch, members, subscription, previous_member_epoch,
                              member_state, assigned, target_assignment, assignment_epoch>>
          ELSE UNCHANGED coordinator
    /\ UNCHANGED <<client_subscription, lost>>
    /\ acked_commit' = NoCommit

(* The session timeout fires for a member whose heartbeats stopped (or are refused); *)
(* its process, if alive, is a zombie until a heartbeat answers UNKNOWN_MEMBER_ID.   *)
SessionTimeout(m) ==
    /\ m \in members
    /\ group_epoch < MaxGroupEpoch \/ Abandoned(m)
    /\ RemoveMember(m)
    /\ UNCHANGED <<clients, lost>>
    /\ acked_commit' = NoCommit

(* The rebalance timeout fires for a member that has not revoked in time. The timer   *)
(* fences only a member still at the epoch it was set at: not one away with epoch -2. *)
RebalanceTimeout(m) ==
    /\ m \in members
    /\ member_state[m] = UNREVOKED
    /\ member_epoch[m] /= StaticLeaveEpoch
    /\ group_epoch < MaxGroupEpoch
    /\ RemoveMember(m)
    /\ UNCHANGED <<clients, lost>>
    /\ acked_commit' = NoCommit

(* OffsetCommit (v9+) from m's process with its member epoch, or with -1 from outside *)
(* the group. Only acknowledged commits are recorded; refused ones change nothing     *)
(* (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID).                                            *)
OffsetCommit(m) ==
    LET e == client_epoch[m]
        accepted ==
            IF e < 0 THEN members = {}
            ELSE /\ m \in members
                 /\ (e = member_epoch[m] \/ BugCommitWithoutEpochCheck)
    IN /\ e /= 0
       /\ accepted
       /\ acked_commit' = [member |-> m, sent_epoch |-> e,
                          member_epoch |-> IF m \in members THEN member_epoch[m] ELSE LeaveEpoch,
                          was_member |-> m \in members, group_empty |-> members = {}]
       /\ UNCHANGED <<coordinator, clients, lost>>

Next ==
    \E m \in Members :
        \/ \E sub \in Subscriptions, delivered \in BOOLEAN :
              ConsumerGroupHeartbeat(m, sub, delivered)
        \/ \E sub \in Subscriptions : Subscribe(m, sub)
        \/ LeaveGroup(m)
        \/ StaticLeave(m)
        \/ SessionTimeout(m)
        \/ RebalanceTimeout(m)
        \/ OffsetCommit(m)

(* Processes in the group go on heartbeating, and abandoned members time out. *)
Fairness ==
    \A m \in Members :
        /\ WF_vars(ConsumerGroupHeartbeat(m, client_subscription[m], TRUE))
        /\ WF_vars(SessionTimeout(m) /\ Abandoned(m))

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

-----------------------------------------------------------------------------
(* Invariants and properties.                                                *)

TypeOK ==
    /\ group_epoch \in Nat
    /\ members \subseteq Members
    /\ \A m \in Members :
          /\ member_state[m] \in {STABLE, UNREVOKED, UNRELEASED}
          /\ subscription[m] \subseteq Topics
          /\ assigned[m] \subseteq Partitions
          /\ pending_revocation[m] \subseteq Partitions
          /\ target_assignment[m] \subseteq Partitions
          /\ owned[m] \subseteq Partitions
          /\ member_epoch[m] >= StaticLeaveEpoch
          /\ client_epoch[m] >= LeaveEpoch
    /\ lost \in 0..MaxLost

(* No partition is held by two members at the coordinator, nor consumed by two  *)
(* processes whose member the group holds. (A zombie, whose member was removed, *)
(* may still consume: its commits are fenced.)                                  *)
AtMostOneOwnerPerPartition ==
    \A p \in Partitions :
        /\ Cardinality({m \in members : p \in assigned[m] \cup pending_revocation[m]}) <= 1
        /\ Cardinality({m \in members : p \in owned[m]}) <= 1

(* No member epoch, the coordinator's or a process's, is ahead of the target's, *)
(* and the target's is never ahead of the group's.                                *)
MemberEpochNotAheadOfGroup ==
    /\ assignment_epoch <= group_epoch
    /\ \A m \in members : member_epoch[m] <= assignment_epoch
    /\ \A m \in Members : client_epoch[m] <= assignment_epoch

(* An acknowledged OffsetCommit came from a member at its current member epoch, *)
(* or with epoch -1 while the group had no members.                              *)
NoStaleMemberEpochCommit ==
    IF acked_commit.sent_epoch < 0
       THEN acked_commit.group_empty
       ELSE acked_commit.was_member /\ acked_commit.sent_epoch = acked_commit.member_epoch

(* Every member present (not away with epoch -2) is reconciled to a target that   *)
(* covers every subscribed partition, and its process consumes exactly that.      *)
Converged ==
    LET active == {m \in members : member_epoch[m] /= StaticLeaveEpoch}
    IN active /= {} =>
        /\ assignment_epoch = group_epoch
        /\ \A p \in Partitions :
              (\E m \in members : Topic(p) \in subscription[m]) =>
                  \E m \in members : p \in target_assignment[m]
        /\ \A m \in active :
              /\ member_state[m] = STABLE
              /\ member_epoch[m] = assignment_epoch
              /\ assigned[m] = target_assignment[m]
              /\ client_epoch[m] = member_epoch[m]
              /\ owned[m] = assigned[m]

(* Once subscriptions and membership stop changing (the bounds stop them), the *)
(* group converges and stays converged.                                        *)
AssignmentConverges == <>[]Converged

=============================================================================
