package torchbridge

// Version is the neoflow version. It is part of every kernel cache key, and
// setup.py reads it from this file.
const Version = "0.1.0"
