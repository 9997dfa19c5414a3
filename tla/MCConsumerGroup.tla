-------------------------- MODULE MCConsumerGroup --------------------------
(* The bounds CI checks ConsumerGroup at; the .cfg files choose the flags. *)
EXTENDS ConsumerGroup
=============================================================================
