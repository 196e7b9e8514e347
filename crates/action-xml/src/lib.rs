//! action-xml (under construction).
