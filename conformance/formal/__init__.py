"""Does the reference follow the specs? TLC on the TLA+ specs and their mutants, the reference's
executions checked as behaviours of the specs (spec checks), and the z3 proofs."""
