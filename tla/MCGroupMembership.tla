------------------------- MODULE MCGroupMembership -------------------------
(* The bounds CI checks GroupMembership at; the .cfg files choose the flags. *)
EXTENDS GroupMembership
=============================================================================
