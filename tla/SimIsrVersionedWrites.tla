------------------------ MODULE SimIsrVersionedWrites ------------------------
(* Random behaviours of IsrVersionedWrites for replay on the replication model               *)
(* (conformance/formal/isr.py). As SimGroupMembership: one simulation run yields Count         *)
(* behaviours of at most Depth steps; Restart puts the base variables back to Init after Depth *)
(* steps or when nothing is enabled, and the invariant Done fails once Count are complete.     *)
(*                                                                                               *)
(* The spec is constrained to the model's choices and granularity (none of this is a safety    *)
(* rule):                                                                                        *)
(*  - no free step is a stutter (a fetch that changes nothing is not worth a step);           *)
(*  - forced steps, taken at once in this order when enabled: the ElectLeader of a controller  *)
(*    just elected (its failover); the StartBroker of a zombie that resumed after its session   *)
(*    expired (it re-registers at once); after Replicate(f), the ExpandIsr of f by its leader;  *)
(*    AdvanceHighWatermark of any leader (the model advances it as soon as it can);            *)
(*  - the controller's decision is the model's: the first live ISR member in order b1, b2, b3  *)
(*    (the leader itself when it lives), an offline partition keeps its last leader;           *)
(*  - ElectLeader only by the current controller (a stale one never runs: it resigned);       *)
(*  - StartBroker of a crashed broker is not taken (the model's restarts are not driven);      *)
(*  - a request goes to the brokers registered when it is written (got: <<broker, leader      *)
(*    epoch>> sent and not yet applied) and is applied at most once; none that keeps a leader *)
(*    at a newer epoch is applied (difference (a));                                            *)
(*  - ShrinkIsr only of the one follower out of sync (the model drops every lagging one);      *)
(*  - a zombie resumes after its expiry only when no controller has a decision to write        *)
(*    (difference (c));                                                                        *)
(*  - no Replicate on a follower's first fetch at a leadership when the model's leader would   *)
(*    move its HW on the fetch offset (difference (b), SplitHw), nor one the leader would      *)
(*    answer with an ISR expansion beyond MaxVersion.                                          *)
EXTENDS IsrVersionedWrites, TLC
CONSTANTS Depth, Count, b1, b2, b3
VARIABLES k, bn, act, got

Order == <<b1, b2, b3>>
FirstOf(S) == Order[CHOOSE j \in 1..3 : Order[j] \in S /\ \A m \in 1..(j - 1) : Order[m] \notin S]
Act(name, a, o) == act' = [action |-> name, actor |-> a, other |-> o]

PyLeader ==
    LET L == partState.leader
        liveIsr == partState.isr \cap Live
    IN  IF L \in Live THEN L
        ELSE IF liveIsr /= {} THEN FirstOf(liveIsr)
        ELSE None
PyKeep == IF partState.leader \in partState.isr THEN partState.leader ELSE FirstOf(partState.isr)
PyElect(c) ==
    /\ ctrlEpochOf[c] = controllerEpoch
    /\ Decisions /= {}
    /\ ElectLeader(c)
    /\ partState'.leader = PyLeader
    /\ PyLeader = None => partState'.isr = {PyKeep}
    /\ got' = got \cup {<<x, partState.leaderEpoch + 1>> : x \in Live}

NeedElect == act.action = "ElectController" /\ Decisions /= {} /\ ctrlEpochOf[act.actor] > 0
NeedStart == act.action = "ResumeBroker" /\ ~session[act.actor]
ExpandNext == act.action = "Replicate" /\ view[act.actor].leader \in Brokers
              /\ ENABLED ExpandIsr(view[act.actor].leader, act.actor)
\* the model's leader reads the follower's fetch offset before the answer is appended: on a
\* follower's first fetch at a leadership its HW may move to less than the spec's (difference (b))
SplitHw(f) ==
    LET l == view[f].leader IN
    /\ l \in Brokers /\ f \in view[l].isr /\ ~fetched[f] /\ Len(log[f]) < Len(log[l])
    /\ \A m \in view[l].isr \ {l, f} : FollowsAtEpoch(m, l) /\ fetched[m]
    /\ Min({Len(log[m]) : m \in view[l].isr \cup {l}}) > hw[l]
HwNext == \E l \in Brokers : ENABLED AdvanceHighWatermark(l)

Forced ==
    IF NeedElect THEN PyElect(act.actor) /\ Act("ElectLeader", act.actor, None)
    ELSE IF NeedStart THEN StartBroker(act.actor) /\ Act("StartBroker", act.actor, None) /\ UNCHANGED got
    ELSE IF ExpandNext
         THEN LET l == view[act.actor].leader IN ExpandIsr(l, act.actor) /\ Act("ExpandIsr", l, act.actor) /\ UNCHANGED got
    ELSE \E l \in Brokers : AdvanceHighWatermark(l) /\ Act("AdvanceHighWatermark", l, None) /\ UNCHANGED got

Free ==
    \E b \in Brokers :
        \/ ElectController(b) /\ Act("ElectController", b, None) /\ UNCHANGED got
        \/ controller = b /\ PyElect(b) /\ Act("ElectLeader", b, None)
        \/ \E r \in lisr :
              /\ <<b, r.partition.leaderEpoch>> \in got
              /\ r.partition.leaderEpoch > view[b].leaderEpoch
              /\ ~(view[b].leader = b /\ r.partition.leader = b)
              /\ brokerState[b] = "up"
              /\ r.controllerEpoch >= seenCtrlEpoch[b]
              /\ seenCtrlEpoch' = [seenCtrlEpoch EXCEPT ![b] = r.controllerEpoch]
              /\ view' = [view EXCEPT ![b] = r.partition]
              /\ fetched' = [fetched EXCEPT ![b] = FALSE]
              /\ UNCHANGED <<store, brokerState, ctrlEpochOf, log, hw, lisr, lastWrite, committed, faults>>
              /\ got' = got \ {<<b, r.partition.leaderEpoch>>}
              /\ Act("LeaderAndIsr", b, None)
        \/ Produce(b) /\ Act("Produce", b, None) /\ UNCHANGED got
        \/ /\ ~SplitHw(b) /\ ~(zkVersion = MaxVersion /\ view[b].leader \in Brokers /\ b \notin view[view[b].leader].isr)
           /\ Replicate(b) /\ Act("Replicate", b, None) /\ UNCHANGED got
        \/ \E f \in Brokers : ShrinkCandidates(b) = {f} /\ ShrinkIsr(b, f) /\ Act("ShrinkIsr", b, f) /\ UNCHANGED got
        \/ StepDown(b) /\ Act("StepDown", b, None) /\ UNCHANGED got
        \/ CrashBroker(b) /\ Act("CrashBroker", b, None) /\ UNCHANGED got
        \/ PauseBroker(b) /\ Act("PauseBroker", b, None) /\ UNCHANGED got
        \/ /\ session[b] \/ controller = None \/ Decisions = {}
           /\ ResumeBroker(b) /\ Act("ResumeBroker", b, None) /\ UNCHANGED got
        \/ ExpireSession(b) /\ Act("ExpireSession", b, None) /\ UNCHANGED got

Step ==
    /\ k < Depth
    /\ IF NeedElect \/ NeedStart \/ ExpandNext \/ HwNext THEN Forced ELSE Free /\ vars' /= vars
    /\ k' = k + 1
    /\ bn' = bn

SimInit ==
    /\ Init
    /\ k = 0 /\ bn = 0 /\ got = {}
    /\ act = [action |-> "Init", actor |-> None, other |-> None]

Restart ==
    /\ k = Depth \/ ~ENABLED Step
    /\ controller' = None /\ controllerEpoch' = 0 /\ session' = [b \in Brokers |-> TRUE]
    /\ partState' = [leader |-> None, leaderEpoch |-> 0, isr |-> Brokers, controllerEpoch |-> 0]
    /\ zkVersion' = 0 /\ brokerState' = [b \in Brokers |-> "up"] /\ ctrlEpochOf' = [b \in Brokers |-> 0]
    /\ seenCtrlEpoch' = [b \in Brokers |-> 0] /\ view' = [b \in Brokers |-> NoView]
    /\ fetched' = [b \in Brokers |-> FALSE] /\ log' = [b \in Brokers |-> <<>>] /\ hw' = [b \in Brokers |-> 0]
    /\ lisr' = {} /\ lastWrite' = [expected |-> 0, before |-> 0] /\ committed' = {} /\ faults' = 0
    /\ k' = 0 /\ bn' = bn + 1 /\ got' = {}
    /\ act' = [action |-> "Init", actor |-> None, other |-> None]

SimNext == Step \/ Restart

Done == bn < Count
=============================================================================
