--------------------------- MODULE GroupMembership ---------------------------
(***************************************************************************)
(* Kafka's classic consumer-group protocol, as spec/group-membership.md     *)
(* states it: the coordinator's view of one group, and clients whose own    *)
(* view can be stale. A client whose generation is out of date keeps        *)
(* sending SyncGroup, Heartbeat and OffsetCommit: it is a zombie, and the   *)
(* generation fences it. Action and invariant names are the reference's     *)
(* (reference/group, reference/group/invariants.py).                         *)
(*                                                                           *)
(* Abstractions: a client keeps one member identity (a restarted client      *)
(* rejoins as the same member); timers fire at any moment, so the join phase *)
(* completes whenever it may, and sessions expire whenever a member is not   *)
(* parked; appends complete at once; members are dynamic.                    *)
(***************************************************************************)
EXTENDS Integers, FiniteSets

CONSTANTS
    Clients,        \* the consumer processes
    Partitions,     \* the partitions the leader assigns
    MaxGeneration,  \* a bound for model checking
    \* Mutant flags: each, when TRUE, breaks one rule (tla/README.md lists them).
    BugCommitWithoutGenerationCheck,
    BugSyncAnyGeneration,
    BugStableBeforeWrite,
    BugLeaderKeptOnLeave,
    BugGenerationReset

None == "none"
States == {"Empty", "PreparingRebalance", "CompletingRebalance", "Stable"}

VARIABLES
    state,          \* the group's state
    generation,     \* the group's generation id
    members,        \* the clients the coordinator holds as members
    joined,         \* members parked in JoinGroup during the join phase
    syncing,        \* members parked in SyncGroup, waiting for the leader's assignment
    pendingSync,    \* members of this generation that have not sent SyncGroup
    leader,         \* a member, or None
    assignment,     \* [Clients -> SUBSET Partitions]: the leader's stored assignment
    assignmentGen,  \* the generation that assignment belongs to, or 0
    clientGen,      \* [Clients -> -1..]: the generation each client believes it is in
    clientLeader,   \* [Clients -> BOOLEAN]: whether its last JoinGroup reply made it leader
    owners,         \* history: [1..MaxGeneration -> [Partitions -> SUBSET Clients]] handed out
    lastCommit      \* history: the last accepted OffsetCommit, or NoCommit

vars == <<state, generation, members, joined, syncing, pendingSync, leader, assignment,
          assignmentGen, clientGen, clientLeader, owners, lastCommit>>

Generations == 1..MaxGeneration
NoCommit == [client |-> None, generationId |-> -1, groupGeneration |-> 0, wasMember |-> FALSE, groupState |-> "Empty"]
NoOwners == [g \in Generations |-> [p \in Partitions |-> {}]]

(* The assignments a correct leader may send: every partition to exactly one member. *)
ValidAssignments(M) ==
    { a \in [Clients -> SUBSET Partitions] :
        /\ \A c \in Clients \ M : a[c] = {}
        /\ \A p \in Partitions : \E m \in M : p \in a[m] /\ \A n \in M \ {m} : p \notin a[n] }

Init ==
    /\ state = "Empty"
    /\ generation = 0
    /\ members = {}
    /\ joined = {}
    /\ syncing = {}
    /\ pendingSync = {}
    /\ leader = None
    /\ assignment = [c \in Clients |-> {}]
    /\ assignmentGen = 0
    /\ clientGen = [c \in Clients |-> -1]
    /\ clientLeader = [c \in Clients |-> FALSE]
    /\ owners = NoOwners
    /\ lastCommit = NoCommit

(* Answer parked SyncGroups from the stored assignment, recording what was handed out. *)
HandOut(S, a, g) ==
    owners' = [owners EXCEPT ![g] = [p \in Partitions |->
                    owners[g][p] \cup {c \in S : p \in a[c]}]]

(* Entering PreparingRebalance: parked syncs learn REBALANCE_IN_PROGRESS (GM-11). *)
StartRebalance ==
    /\ state' = "PreparingRebalance"
    /\ syncing' = {}
    /\ pendingSync' = {}

NewLeader(M) == IF M = {} THEN {None} ELSE M

(* GM-10/GM-11: a client joins (or rejoins with changed metadata): a join phase starts or goes on. *)
JoinGroup(c) ==
    /\ generation < MaxGeneration
    /\ members' = members \cup {c}
    /\ joined' = joined \cup {c}
    /\ leader' = IF leader = None THEN c ELSE leader
    /\ IF state = "PreparingRebalance"
          THEN UNCHANGED <<state, syncing, pendingSync>>
          ELSE StartRebalance
    /\ UNCHANGED <<generation, assignment, assignmentGen, clientGen, clientLeader, owners, lastCommit>>

(* GM-12: an unchanged member (not the Stable leader) is answered with the current generation. *)
JoinGroupAnswered(c) ==
    /\ c \in members
    /\ \/ state = "CompletingRebalance"
       \/ state = "Stable" /\ c /= leader
    /\ clientGen' = [clientGen EXCEPT ![c] = generation]
    /\ clientLeader' = [clientLeader EXCEPT ![c] = (c = leader)]
    /\ UNCHANGED <<state, generation, members, joined, syncing, pendingSync, leader, assignment,
                   assignmentGen, owners, lastCommit>>

(* GM-14/GM-15/GM-17: the join phase completes into the next generation. *)
CompleteJoin ==
    /\ state = "PreparingRebalance"
    /\ LET next == IF BugGenerationReset /\ joined = {} THEN 0 ELSE generation + 1
       IN /\ generation' = next
          /\ members' = joined
          /\ \E l \in NewLeader(joined) :
                leader' = IF leader \in joined THEN leader ELSE l
          /\ state' = IF joined = {} THEN "Empty" ELSE "CompletingRebalance"
          /\ pendingSync' = joined
          /\ clientGen' = [c \in Clients |-> IF c \in joined THEN next ELSE clientGen[c]]
          /\ clientLeader' = [c \in Clients |->
                                IF c \in joined THEN c = leader' ELSE clientLeader[c]]
    /\ joined' = {}
    /\ syncing' = {}
    /\ UNCHANGED <<assignment, assignmentGen, owners, lastCommit>>

(* What the coordinator checks before a SyncGroup from c (GM-20). *)
SyncAccepted(c) ==
    /\ c \in members
    /\ \/ clientGen[c] = generation
       \/ BugSyncAnyGeneration

(* GM-21/GM-22/GM-24: SyncGroup; the leader's assignment makes the group Stable. *)
SyncGroup(c) ==
    /\ clientGen[c] >= 0
    /\ IF ~ SyncAccepted(c)
          THEN UNCHANGED vars                                   \* UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION
          ELSE
          CASE state = "CompletingRebalance" /\ (c = leader \/ (BugSyncAnyGeneration /\ clientLeader[c])) ->
                  \E a \in ValidAssignments(members) :
                     /\ assignment' = IF BugStableBeforeWrite THEN assignment ELSE a
                     /\ assignmentGen' = IF BugStableBeforeWrite THEN assignmentGen ELSE generation
                     /\ state' = "Stable"
                     /\ HandOut(syncing \cup {c}, a, generation)
                     /\ syncing' = {}
                     /\ pendingSync' = pendingSync \ {c}
                     /\ UNCHANGED <<generation, members, joined, leader, clientGen, clientLeader, lastCommit>>
            [] state = "CompletingRebalance" ->
                  /\ syncing' = syncing \cup {c}
                  /\ pendingSync' = pendingSync \ {c}
                  /\ UNCHANGED <<state, generation, members, joined, leader, assignment, assignmentGen,
                                 clientGen, clientLeader, owners, lastCommit>>
            [] state = "Stable" /\ BugSyncAnyGeneration /\ clientLeader[c] ->
                  \* the mutant lets a (zombie) leader store a new assignment in a Stable group
                  \E a \in ValidAssignments(members) :
                     /\ assignment' = a
                     /\ HandOut({c}, a, generation)
                     /\ UNCHANGED <<state, generation, members, joined, syncing, pendingSync, leader,
                                    assignmentGen, clientGen, clientLeader, lastCommit>>
            [] state = "Stable" ->
                  /\ HandOut({c}, assignment, generation)
                  /\ pendingSync' = pendingSync \ {c}
                  /\ UNCHANGED <<state, generation, members, joined, syncing, leader, assignment,
                                 assignmentGen, clientGen, clientLeader, lastCommit>>
            [] OTHER -> UNCHANGED vars                          \* REBALANCE_IN_PROGRESS

(* GM-30: heartbeats keep sessions alive; in this model they change nothing. *)
Heartbeat(c) ==
    /\ clientGen[c] >= 0
    /\ UNCHANGED vars

(* Removing members, which starts a rebalance from CompletingRebalance or Stable (GM-31/33/34). *)
Remove(S) ==
    /\ members' = members \ S
    /\ joined' = joined \ S
    /\ \E l \in NewLeader(members \ S) :
          leader' = IF leader \in S /\ ~BugLeaderKeptOnLeave THEN l ELSE leader
    /\ IF state \in {"CompletingRebalance", "Stable"}
          THEN StartRebalance
          ELSE UNCHANGED <<state, syncing, pendingSync>>

(* GM-31: a member leaves; the client forgets its generation. *)
LeaveGroup(c) ==
    /\ c \in members
    /\ Remove({c})
    /\ clientGen' = [clientGen EXCEPT ![c] = -1]
    /\ clientLeader' = [clientLeader EXCEPT ![c] = FALSE]
    /\ UNCHANGED <<generation, assignment, assignmentGen, owners, lastCommit>>

(* GM-33: a member not parked with the coordinator loses its session; its process may live on. *)
ExpireSession(c) ==
    /\ c \in members \ (joined \cup syncing)
    /\ Remove({c})
    /\ UNCHANGED <<generation, assignment, assignmentGen, clientGen, clientLeader, owners, lastCommit>>

(* GM-34: members that never sent SyncGroup are removed. *)
ExpirePendingSync ==
    /\ state \in {"CompletingRebalance", "Stable"}
    /\ pendingSync /= {}
    /\ Remove(pendingSync)
    /\ UNCHANGED <<generation, assignment, assignmentGen, clientGen, clientLeader, owners, lastCommit>>

(* GM-50/GM-51/GM-52: OffsetCommit with the client's generation, stale or not, or without one. *)
OffsetCommit(c, withGeneration) ==
    LET gen == IF withGeneration THEN clientGen[c] ELSE -1
        accepted ==
            IF gen < 0
               THEN state = "Empty"
               ELSE /\ c \in members
                    /\ state \in {"PreparingRebalance", "Stable"}
                    /\ (gen = generation \/ BugCommitWithoutGenerationCheck)
    IN /\ withGeneration => clientGen[c] >= 0
       /\ accepted
       /\ lastCommit' = [client |-> c, generationId |-> gen, groupGeneration |-> generation,
                         wasMember |-> c \in members, groupState |-> state]
       /\ UNCHANGED <<state, generation, members, joined, syncing, pendingSync, leader, assignment,
                      assignmentGen, clientGen, clientLeader, owners>>

(* A client process restarts and forgets what it knew; the coordinator keeps it until it expires. *)
Crash(c) ==
    /\ clientGen[c] >= 0
    /\ clientGen' = [clientGen EXCEPT ![c] = -1]
    /\ clientLeader' = [clientLeader EXCEPT ![c] = FALSE]
    /\ UNCHANGED <<state, generation, members, joined, syncing, pendingSync, leader, assignment,
                   assignmentGen, owners, lastCommit>>

Next ==
    \/ \E c \in Clients :
          \/ JoinGroup(c)
          \/ JoinGroupAnswered(c)
          \/ SyncGroup(c)
          \/ Heartbeat(c)
          \/ LeaveGroup(c)
          \/ ExpireSession(c)
          \/ OffsetCommit(c, TRUE)
          \/ OffsetCommit(c, FALSE)
          \/ Crash(c)
    \/ CompleteJoin
    \/ ExpirePendingSync

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* The invariants, named as in reference/group/invariants.py.               *)

TypeOK ==
    /\ state \in States
    /\ members \subseteq Clients
    /\ joined \subseteq members
    /\ syncing \subseteq members
    /\ leader \in Clients \cup {None}

NoStaleGenerationCommit ==
        IF lastCommit.generationId < 0
           THEN lastCommit.groupState = "Empty"
           ELSE /\ lastCommit.wasMember
                /\ lastCommit.generationId = lastCommit.groupGeneration

AtMostOneOwnerPerPartition ==
    \A g \in Generations : \A p \in Partitions : Cardinality(owners[g][p]) <= 1

LeaderIsMember ==
    /\ (members = {}) <=> (leader = None)
    /\ leader /= None => leader \in members

StableImpliesAllSynced ==
    state = "Stable" => assignmentGen = generation

GenerationMonotonic == [][generation' >= generation]_vars

=============================================================================
