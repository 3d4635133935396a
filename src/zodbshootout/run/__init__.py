"""The cell loop: runner, rounds, precision rule, calibration, progress events, noise."""
