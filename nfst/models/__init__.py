"""The neural models: the scorer p̃_θ of mark strings and the proposal samplers q_φ."""
