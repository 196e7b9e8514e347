//! The line floor: where a line begins, for patterns that match only at line start.

/// Where a line begins, for [`Pattern::at_line_start`]: bytes of `hay` before `floor` are
/// not looked at, and `floor_is_line_start` says whether `floor` begins a line.
#[derive(Debug, Clone, Copy)]
pub(super) struct LineFloor {
    pub(super) floor: usize,
    pub(super) floor_is_line_start: bool,
}

pub(super) fn is_line_start(hay: &[u8], at: usize, lf: LineFloor) -> bool {
    let mut i = at;
    while i > lf.floor {
        match hay[i - 1] {
            b'\n' => return true,
            b' ' | b'\t' | b'\r' => i -= 1,
            _ => return false,
        }
    }
    lf.floor_is_line_start
}
