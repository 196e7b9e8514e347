//! tool-dispatch (under construction).
