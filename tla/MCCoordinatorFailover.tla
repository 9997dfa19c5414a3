----------------------- MODULE MCCoordinatorFailover -----------------------
(* The bounds CI checks CoordinatorFailover at; the .cfg files choose the flags.   *)
(* Brokers are interchangeable: no action or invariant names one, so a cfg may     *)
(* check the spec up to a permutation of the brokers (SYMMETRY BrokerSymmetry).    *)
EXTENDS CoordinatorFailover, TLC
BrokerSymmetry == Permutations(Brokers)
=============================================================================
