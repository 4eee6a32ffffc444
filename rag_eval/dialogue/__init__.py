"""The dialogue tier's core: dialogue items, the dialogue call, the student simulator, replay,
metrics, case verdicts and repeated trials. Pure: no pytest, no I/O beyond reading a set."""
