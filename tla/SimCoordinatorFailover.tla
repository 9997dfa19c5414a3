------------------------ MODULE SimCoordinatorFailover ------------------------
(* Random behaviours of CoordinatorFailover for replay on the reference                        *)
(* (conformance/formal/failover.py). As SimGroupMembership: one simulation run yields Count    *)
(* behaviours of at most Depth steps, Restart puts the base variables back to Init after Depth  *)
(* steps or when nothing is enabled, and the invariant Done fails once Count are complete.      *)
(*                                                                                               *)
(* The reference takes several spec steps in one step, in a fixed order, and decides some      *)
(* choices itself; this wrapper constrains the spec to what it would do (none of this is a     *)
(* safety rule):                                                                                 *)
(*  - A "free" step starts what the reference does in one step: ElectLeader (the controller's  *)
(*    choice after replica x's session expiry: the first ISR member in assignment order when  *)
(*    x led, else the leader keeps leading with x out of the ISR; the first election names b1  *)
(*    and keeps the ISR), BecomeCoordinator, ResignCoordinator, LoadGroup, SyncGroup,           *)
(*    OffsetCommit, or Fetch(f), a ghost step (a stutter of the spec's variables) in which     *)
(*    f's leader learns f's log end (known, the leader's Replica state).                        *)
(*  - Forced steps follow, in the reference's order: after a Fetch, ExpandIsr when the         *)
(*    reference's leader would add f (its log end reached the high watermark and the epoch    *)
(*    start); then AdvanceHighWatermark when the smallest log end the leader *knows* over its  *)
(*    ISR passes its high watermark (also after an append and after BecomeCoordinator); then   *)
(*    every AckCommit the high watermark allows; then, after a Fetch, the Replicate that is    *)
(*    the fetch's answer (the whole leader log, as the reference takes it).                     *)
(*  - Steps the reference would take but the spec cannot follow are not started (see the     *)
(*    module docstring's findings): no Fetch from a leader that would try an ISR write it       *)
(*    cannot make (it steps down), none by a follower whose log diverges or whose high          *)
(*    watermark is above its leader's, and no step after which the reference's high watermark  *)
(*    would move to other than the smallest log end over an ISR all following at the epoch.   *)
(*    No election before the leader applied the current epoch; the client rebalances only      *)
(*    while no group record is in any log and none was acknowledged.                           *)
EXTENDS CoordinatorFailover
CONSTANTS Depth, Count, b1, b2, b3, p1
VARIABLES k, bn, act, phase, fF, fL, known

Order == <<b1, b2, b3>>
FirstOf(S) == Order[CHOOSE j \in 1..3 : Order[j] \in S /\ \A m \in 1..(j - 1) : Order[m] \notin S]
NoKnown == [b \in Brokers |-> [f \in Brokers |-> -1]]
Act(name, a1, a2) == act' = [action |-> name, a1 |-> a1, a2 |-> a2]
IsrWritable(l) == leader = l /\ LeadsInView(l) /\ view[l].epoch = leaderEpoch

\* the reference leader's high watermark candidate: the smallest log end it knows over its ISR
PyCand(l) == SetMin({Len(log[l])} \cup {known[l][f] : f \in view[l].isr \ {l}})
HW1(l) == Max(hw[l], PyCand(l))
WouldExpand(l, f) == f \notin view[l].isr /\ known[l][f] >= Max(HW1(l), EpochStartOffset(l))
NeedHW(l) == l /= None /\ LeadsInView(l) /\ PyCand(l) > hw[l]
NeedAck == \E w \in pending : status[w.broker] = "Active" /\ w.index <= hw[w.broker]
Answer(f, l) == <<log[l], Min(hw[l], Len(log[l]))>>
NeedReplicate(f, l) == f /= None /\ Answer(f, l) /= <<log[f], hw[f]>>
\* the spec can follow the reference's high watermark: AdvanceHighWatermark moves it there exactly
Feasible ==
    phase = "free" \/ ~NeedHW(fL)
      \/ (/\ \A f \in view[fL].isr \ {fL} : CaughtUpFollower(f, fL)
          /\ SetMin({Len(log[f]) : f \in view[fL].isr}) = PyCand(fL))

\* the stage after a step: the first one still needed
Stage(s) ==
    IF s = "expand" /\ fF /= None /\ WouldExpand(fL, fF) THEN "expand"
    ELSE IF s \in {"expand", "hw"} /\ NeedHW(fL) THEN "hw"
    ELSE IF s \in {"expand", "hw", "ack"} /\ NeedAck THEN "ack"
    ELSE IF s \in {"expand", "hw", "ack", "replicate"} /\ fF /= None /\ NeedReplicate(fF, fL) THEN "replicate"
    ELSE "free"

Then(s) == phase' = Stage(s)'

Elect ==
    \/ /\ leader = None
       /\ ElectLeader(b1) /\ isr' = isr
       /\ Act("ElectLeader", b1, None)
    \/ /\ leader /= None /\ view[leader].epoch = leaderEpoch
       /\ \E x \in isr :
             /\ isr \ {x} /= {}
             /\ LET l == IF x = leader THEN FirstOf(isr \ {x}) ELSE leader
                IN ElectLeader(l) /\ leader' = l /\ isr' = isr \ {x}
             /\ Act("ElectLeader", leader', x)

FetchGhost(f) ==
    LET l == view[f].leader
    IN /\ l /= None /\ l /= f /\ view[l].leader = l /\ view[l].epoch = view[f].epoch
       /\ IsPrefix(log[f], log[l]) /\ hw[f] <= hw[l]
       /\ known' = [known EXCEPT ![l][f] = Len(log[f])]
       /\ fF' = f /\ fL' = l
       /\ UNCHANGED vars
       /\ Act("Fetch", f, None)
       \* a reference leader that is not current would try an ISR write and step down
       /\ ~(WouldExpand(l, f)' /\ ~IsrWritable(l))
       /\ phase' = Stage("expand")'
       \* a fetch that changes nothing is not worth a step
       /\ known' /= known \/ phase' /= "free"

Free ==
    /\ phase = "free"
    /\ \/ Elect /\ UNCHANGED known /\ phase' = "free" /\ UNCHANGED <<fF, fL>>
       \/ \E b \in Brokers :
            \/ /\ BecomeCoordinator(b)
               /\ known' = IF LeadsInView(b) THEN known ELSE [known EXCEPT ![b] = [f \in Brokers |-> -1]]
               /\ Act("BecomeCoordinator", b, None) /\ fF' = None /\ fL' = b /\ Then("hw")
            \/ /\ ResignCoordinator(b) /\ UNCHANGED known
               /\ Act("ResignCoordinator", b, None) /\ phase' = "free" /\ fF' = None /\ fL' = None
            \/ /\ LoadGroup(b) /\ UNCHANGED known
               /\ Act("LoadGroup", b, None) /\ phase' = "free" /\ fF' = None /\ fL' = None
            \/ /\ ackedGen = 0 /\ \A x \in Brokers : \A j \in 1..Len(log[x]) : log[x][j].kind /= "group"
               /\ SyncGroup(b) /\ UNCHANGED known
               /\ Act("SyncGroup", b, None) /\ fF' = None /\ fL' = b /\ Then("hw")
            \/ \E p \in TopicPartitions :
                 /\ OffsetCommit(b, p) /\ UNCHANGED known
                 /\ Act("OffsetCommit", b, p) /\ fF' = None /\ fL' = b /\ Then("hw")
            \/ FetchGhost(b)

Forced ==
    /\ phase /= "free"
    /\ UNCHANGED <<known, fF, fL>>
    /\ \/ phase = "expand" /\ ExpandIsr(fL, fF) /\ Act("ExpandIsr", fL, fF) /\ Then("hw")
       \/ phase = "hw" /\ AdvanceHighWatermark(fL) /\ Act("AdvanceHighWatermark", fL, None) /\ Then("ack")
       \/ phase = "ack" /\ \E b \in Brokers : AckCommit(b) /\ Act("AckCommit", b, None) /\ Then("ack")
       \/ phase = "replicate" /\ Replicate(fF) /\ log'[fF] = log[fL] /\ Act("Replicate", fF, None)
          /\ Then("replicate")

Step ==
    /\ k < Depth
    /\ Free \/ Forced
    /\ Feasible'
    /\ k' = k + 1
    /\ bn' = bn

SimInit ==
    /\ Init
    /\ k = 0 /\ bn = 0 /\ phase = "free" /\ fF = None /\ fL = None /\ known = NoKnown
    /\ act = [action |-> "Init", a1 |-> None, a2 |-> None]

Restart ==
    /\ k = Depth \/ ~ENABLED Step
    /\ leader' = None /\ leaderEpoch' = 0 /\ isr' = Brokers /\ view' = [b \in Brokers |-> NoView]
    /\ log' = [b \in Brokers |-> <<>>] /\ hw' = [b \in Brokers |-> 0]
    /\ status' = [b \in Brokers |-> "NotCoordinator"] /\ cache' = [b \in Brokers |-> EmptyGroup]
    /\ pending' = {} /\ ackedGen' = 0 /\ acked' = [p \in TopicPartitions |-> 0] /\ commits' = 0
    /\ answeredLoaded' = TRUE
    /\ k' = 0 /\ bn' = bn + 1 /\ phase' = "free" /\ fF' = None /\ fL' = None /\ known' = NoKnown
    /\ act' = [action |-> "Init", a1 |-> None, a2 |-> None]

SimNext == Step \/ Restart

Done == bn < Count
=============================================================================
