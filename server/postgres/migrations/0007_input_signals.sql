-- Schema v7: input for the running turn (text steered into it) travels as a signal too,
-- to the replica running the turn, like decisions, answers and cancels.
ALTER TABLE turn_signals DROP CONSTRAINT turn_signals_kind_check;
ALTER TABLE turn_signals ADD CONSTRAINT turn_signals_kind_check
    CHECK (kind IN ('decide', 'answer', 'cancel', 'input'));
