//! tam-parse (under construction).
