//! What a server process costs, read from `/proc/<pid>` (Linux).

use std::fs;

/// CPU seconds the process has used so far, user plus system (`/proc/<pid>/stat` fields
/// 14 and 15, in clock ticks).
///
/// # Errors
/// The process is gone, or the file is not as expected.
pub fn cpu_seconds(pid: u32) -> Result<f64, String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|err| format!("/proc/{pid}/stat: {err}"))?;
    parse_cpu_ticks(&stat).map(|ticks| {
        #[allow(clippy::cast_precision_loss)]
        let ticks = ticks as f64;
        ticks / clock_ticks_per_second()
    })
}

/// utime + stime from the text of a `/proc/<pid>/stat`.
///
/// # Errors
/// Not a stat line.
pub fn parse_cpu_ticks(stat: &str) -> Result<u64, String> {
    // The command name (field 2) is in parentheses and may hold spaces: count the fields
    // after its closing parenthesis, which start with the state (field 3).
    let after = stat
        .rfind(')')
        .map(|at| &stat[at + 1..])
        .ok_or("no command name in stat")?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |n: usize| -> Result<u64, String> {
        fields
            .get(n - 3)
            .ok_or_else(|| format!("stat has no field {n}"))?
            .parse()
            .map_err(|err| format!("stat field {n}: {err}"))
    };
    Ok(field(14)? + field(15)?)
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    #[allow(clippy::cast_precision_loss)]
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// The whole machine's CPU time so far, in seconds summed over its CPUs: busy (every
/// `/proc/stat` column but idle and iowait) and total.
///
/// # Errors
/// `/proc/stat` cannot be read or is not as expected.
pub fn machine_seconds() -> Result<(f64, f64), String> {
    let stat = fs::read_to_string("/proc/stat").map_err(|err| format!("/proc/stat: {err}"))?;
    let (busy, total) = parse_machine_ticks(&stat)?;
    #[allow(clippy::cast_precision_loss)]
    let (busy, total) = (busy as f64, total as f64);
    let hz = clock_ticks_per_second();
    Ok((busy / hz, total / hz))
}

/// Busy and total ticks from the `cpu` line of a `/proc/stat` (guest time is already in
/// user and nice, so the columns after steal are left out).
///
/// # Errors
/// No `cpu` line with at least the four first columns.
pub fn parse_machine_ticks(stat: &str) -> Result<(u64, u64), String> {
    let line = stat
        .lines()
        .find(|line| line.starts_with("cpu "))
        .ok_or("no cpu line in /proc/stat")?;
    let columns: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|column| column.parse().map_err(|err| format!("/proc/stat: {err}")))
        .collect::<Result<_, _>>()?;
    if columns.len() < 4 {
        return Err("/proc/stat: a short cpu line".into());
    }
    let total: u64 = columns.iter().sum();
    let idle = columns[3] + columns.get(4).copied().unwrap_or(0);
    Ok((total - idle, total))
}

/// The process's memory and threads now (`/proc/<pid>/status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Status {
    /// Peak resident set size (`VmHWM`), KiB.
    pub peak_rss_kib: u64,
    /// Resident set size now (`VmRSS`), KiB.
    pub rss_kib: u64,
    /// Threads now (`Threads`).
    pub threads: u64,
}

/// Reads [`Status`] of `pid`.
///
/// # Errors
/// The process is gone, or a field is missing.
pub fn status(pid: u32) -> Result<Status, String> {
    let text = fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|err| format!("/proc/{pid}/status: {err}"))?;
    parse_status(&text)
}

/// [`Status`] from the text of a `/proc/<pid>/status`.
///
/// # Errors
/// A field is missing.
pub fn parse_status(text: &str) -> Result<Status, String> {
    let field = |name: &str| -> Result<u64, String> {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|value| value.split_whitespace().next()?.parse().ok())
            .ok_or_else(|| format!("no {name} in status"))
    };
    Ok(Status {
        peak_rss_kib: field("VmHWM")?,
        rss_kib: field("VmRSS")?,
        threads: field("Threads")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_after_a_command_name_with_spaces() {
        let stat = "4242 (tokio-runtime w) S 1 4242 4242 0 -1 4194560 1234 0 0 0 \
                    150 37 0 0 20 0 9 0 777 123456 789 18446744073709551615";
        assert_eq!(parse_cpu_ticks(stat), Ok(187));
        assert!(parse_cpu_ticks("garbage").is_err());
    }

    #[test]
    fn machine_ticks_leave_idle_and_iowait_out() {
        let stat = "cpu  100 50 30 800 20 0 10 5 7 0\ncpu0 1 2 3 4 5 6 7 8 9 0\n";
        // user nice system idle iowait irq softirq steal (guest columns left out).
        assert_eq!(parse_machine_ticks(stat), Ok((195, 1015)));
        assert!(parse_machine_ticks("intr 1 2\n").is_err());
        assert!(machine_seconds().is_ok());
    }

    #[test]
    fn status_fields() {
        let text = "Name:\tmcp_http\nVmHWM:\t  234567 kB\nVmRSS:\t  200000 kB\nThreads:\t515\n";
        assert_eq!(
            parse_status(text),
            Ok(Status {
                peak_rss_kib: 234_567,
                rss_kib: 200_000,
                threads: 515
            })
        );
        assert!(parse_status("Name: x\n").is_err());
    }

    #[test]
    fn this_process_can_be_read() {
        let me = std::process::id();
        assert!(cpu_seconds(me).is_ok());
        let now = status(me).expect("own status");
        assert!(now.threads >= 1 && now.peak_rss_kib >= now.rss_kib.min(1));
    }
}
