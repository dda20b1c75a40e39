//! Sizes the Linux kernel reports in `/proc`: one reader for memory figures (the machine's RAM, a
//! process's resident set and address space) used by the model choice, the parse workers' caps and OCR
//! permits, and the benchmarks.

/// The value of `field` (with its colon, e.g. `"MemAvailable:"`, `"VmHWM:"`) in `file` (`/proc/meminfo`,
/// `/proc/self/status`), in KiB as the kernel writes it (`MemTotal:  24576000 kB`); `None` off Linux, or
/// when the file or the field cannot be read.
pub fn proc_kib(file: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_figures_are_read_from_proc() {
        if !std::path::Path::new("/proc/meminfo").exists() {
            return; // not Linux
        }
        let total = proc_kib("/proc/meminfo", "MemTotal:").expect("MemTotal");
        let available = proc_kib("/proc/meminfo", "MemAvailable:").expect("MemAvailable");
        assert!(available > 0 && available <= total, "{available} of {total} KiB");
        let resident = proc_kib("/proc/self/status", "VmRSS:").expect("VmRSS");
        assert!(resident > 0 && resident <= proc_kib("/proc/self/status", "VmHWM:").expect("VmHWM"));
        assert_eq!(proc_kib("/proc/meminfo", "NoSuchField:"), None);
        assert_eq!(proc_kib("/proc/no-such-file", "MemTotal:"), None);
    }
}
