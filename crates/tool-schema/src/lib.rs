//! tool-schema (under construction).
