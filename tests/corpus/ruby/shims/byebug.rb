# Stand-in used only while recording: the suites require byebug for debugging only.
