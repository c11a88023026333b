"""The experiment harness: config -> grid of trials -> joblib -> results store -> tables and figures."""
