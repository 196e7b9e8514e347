//! The process's open-file limit: raising it to its hard limit, and the default connection
//! cap sized from it.
//!
//! Every open connection is a file descriptor, and so is every upstream socket, the
//! listener, and each connection the accept loop takes to close or refuse. With the soft
//! limit most systems start a process with (1 024 on Linux, 256 on macOS), a few hundred idle
//! sockets are enough to run the process out of descriptors; the hard limit is usually far
//! higher (often 524 288 or more on Linux), and any process may raise its soft limit up to it.

use std::io;

/// The most connections [`default_max_connections`] allows, whatever the open-file limit:
/// 16 384. It bounds the memory idle connections can take: each costs its task, its
/// state and a read buffer that holds at most a request header (16 KiB), so 16 384 of
/// them stay under 400 MiB even when every one holds a whole header's worth of bytes
/// (SECURITY.md has the measured figures).
pub const MAX_DEFAULT_CONNECTIONS: usize = 16_384;

/// [`default_max_connections`] when the open-file limit cannot be read (not on unix).
const FALLBACK_MAX_CONNECTIONS: usize = 256;

/// Raises the process's soft limit on open files (`RLIMIT_NOFILE`) to its hard limit and
/// returns the soft limit now in force (`u64::MAX`: unlimited). A soft limit already at
/// the hard one is left as it is. Where the system refuses the hard limit as a soft one
/// (macOS, whose hard limit is often unlimited, takes at most `OPEN_MAX`, 10 240), the soft
/// limit is raised to 10 240 instead when that is higher.
///
/// `tam serve` calls it at start, before building its [`ProxyConfig`](crate::ProxyConfig),
/// so that [`default_max_connections`] is sized from the raised limit. [`serve`](crate::serve)
/// does not: the limit belongs to the whole process, and a program that still uses
/// `select(2)` (which cannot watch a descriptor over 1 023) may depend on the low soft limit;
/// an application embedding the proxy calls it when that is not the case.
///
/// # Errors
/// The system's error when the limit cannot be read or raised; on other platforms than
/// unix, [`io::ErrorKind::Unsupported`].
pub fn raise_open_file_limit() -> io::Result<u64> {
    #[cfg(unix)]
    {
        unix::raise()
    }
    #[cfg(not(unix))]
    {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "the open-file limit is raised on unix only",
        ))
    }
}

/// The soft limit on open files in force, `u64::MAX` when unlimited; `None` when it cannot
/// be read (not on unix).
pub fn open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        unix::limits().ok().map(|(soft, _)| soft)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The default of [`ProxyConfig::max_connections`](crate::ProxyConfig::max_connections):
/// half the soft open-file limit in force ([`open_file_limit`]), at least 1 and at most
/// [`MAX_DEFAULT_CONNECTIONS`]; 256 when the limit cannot be read. The other half is left
/// for the upstream sockets (one per upstream request under way, plus the idle ones the
/// connection pool keeps), the connections the accept loop is closing or refusing, the
/// listener and the process's other files, so a full cap never runs the process out of
/// descriptors (an `accept` that fails for want of one would stall every new client).
pub fn default_max_connections() -> usize {
    match open_file_limit() {
        Some(limit) => usize::try_from(limit / 2)
            .unwrap_or(usize::MAX)
            .clamp(1, MAX_DEFAULT_CONNECTIONS),
        None => FALLBACK_MAX_CONNECTIONS,
    }
}

#[cfg(unix)]
mod unix {
    use std::io;

    use nix::sys::resource::{RLIM_INFINITY, Resource, getrlimit, rlim_t, setrlimit};

    /// macOS's `OPEN_MAX`: the highest soft limit it takes when the hard one is higher.
    const OPEN_MAX: rlim_t = 10_240;

    /// A limit as a number, `u64::MAX` for unlimited.
    #[allow(clippy::unnecessary_cast)] // `rlim_t` is `u64` on most targets, not all.
    fn number(limit: rlim_t) -> u64 {
        if limit == RLIM_INFINITY {
            u64::MAX
        } else {
            limit as u64
        }
    }

    /// The soft and hard limits on open files, as numbers.
    pub(super) fn limits() -> io::Result<(u64, u64)> {
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
        Ok((number(soft), number(hard)))
    }

    pub(super) fn raise() -> io::Result<u64> {
        let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
        if soft == RLIM_INFINITY || (hard != RLIM_INFINITY && soft >= hard) {
            return Ok(number(soft));
        }
        match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => Ok(number(hard)),
            Err(error) => {
                let fallback = if hard == RLIM_INFINITY {
                    OPEN_MAX
                } else {
                    OPEN_MAX.min(hard)
                };
                if fallback > soft && setrlimit(Resource::RLIMIT_NOFILE, fallback, hard).is_ok() {
                    Ok(number(fallback))
                } else {
                    Err(error.into())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn the_limit_is_raised_to_the_hard_one() {
        use nix::sys::resource::{Resource, getrlimit, setrlimit};
        // Lower the soft limit first (any process may), then raise it again.
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        let (_, hard_number) = unix::limits().unwrap();
        if hard_number > 4096 {
            setrlimit(Resource::RLIMIT_NOFILE, 2048, hard).unwrap();
            assert_eq!(open_file_limit(), Some(2048));
            assert_eq!(default_max_connections(), 1024);
        }
        let raised = raise_open_file_limit().unwrap();
        let (soft, hard) = unix::limits().unwrap();
        assert_eq!(raised, soft);
        assert!(
            soft == hard || (hard == u64::MAX && soft >= 10_240),
            "{soft} of {hard}"
        );
        // Raising again changes nothing.
        assert_eq!(raise_open_file_limit().unwrap(), soft);
        assert_eq!(open_file_limit(), Some(soft));
        let expected = usize::try_from(soft / 2)
            .unwrap_or(usize::MAX)
            .clamp(1, MAX_DEFAULT_CONNECTIONS);
        assert_eq!(default_max_connections(), expected);
    }
}
