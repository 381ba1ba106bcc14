//! No orphan server: a server a test starts gets `SIGKILL` when the thread that started it
//! ends (Linux's `PR_SET_PDEATHSIG`), so a test binary killed outright leaves none behind.

use std::process::Command;

/// Makes the process `command` starts die with the thread that starts it (the test's
/// thread, which otherwise kills it on drop first). Set last before `exec`: after a switch
/// of user (a change of credentials clears it).
#[cfg(target_os = "linux")]
pub(crate) fn die_with_parent(command: &mut Command) {
    use std::ffi::{c_int, c_ulong};
    use std::os::unix::process::CommandExt;

    const PR_SET_PDEATHSIG: c_int = 1;
    const SIGKILL: c_ulong = 9;
    unsafe extern "C" {
        fn prctl(option: c_int, ...) -> c_int;
    }
    // SAFETY: between fork and exec, `prctl(PR_SET_PDEATHSIG)` is async-signal-safe and
    // changes only the child.
    unsafe {
        command.pre_exec(|| {
            if prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}

/// Elsewhere nothing kills a server with its test (its drop does).
#[cfg(not(target_os = "linux"))]
pub(crate) fn die_with_parent(_command: &mut Command) {}
