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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanks_and_cr_before_a_newline_or_the_floor() {
        let lf = LineFloor {
            floor: 0,
            floor_is_line_start: true,
        };
        assert!(is_line_start(b"  \t#", 3, lf));
        assert!(is_line_start(b"x\n \r#", 4, lf));
        assert!(!is_line_start(b"x #", 2, lf));
        let mid = LineFloor {
            floor: 2,
            floor_is_line_start: false,
        };
        assert!(
            !is_line_start(b"\n\n  #", 4, mid),
            "bytes before the floor are not read"
        );
    }
}
