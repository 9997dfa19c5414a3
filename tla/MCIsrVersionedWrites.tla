------------------------ MODULE MCIsrVersionedWrites ------------------------
(* The bounds CI checks IsrVersionedWrites at; the .cfg files choose the flags. *)
EXTENDS IsrVersionedWrites, TLC

(* Brokers are interchangeable: Init treats them alike and no action names one. *)
BrokerSymmetry == Permutations(Brokers)
=============================================================================
