//! What a `dream` process sets up about itself before it does anything: the binary's and
//! the benchmark's `main` call it first, so the cycles the benchmark measures run as a
//! user's do.

/// glibc's allocator, set for a process that does a batch of work and exits, before any
/// thread starts. Measured on a first run's backfill of a year (a million events,
/// docs/BENCHMARKS.md, "A heavy user's year"), resident memory was about twice the live
/// heap: each thread that allocated (the model calls run `llm.concurrency` at a time, the
/// clustering on up to four cores) got an arena of its own, each left with freed memory
/// between live allocations, and a large buffer freed raised the size under which later
/// ones are carved from the heap rather than mapped. So: one arena (dream's threads are
/// few and mostly wait on the network), and buffers from 256 KiB mapped and returned whole
/// when freed. A variable the allocator reads itself (`MALLOC_ARENA_MAX`,
/// `MALLOC_MMAP_THRESHOLD_`) wins, for whoever measures otherwise.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            // SAFETY: mallopt only sets a parameter of the allocator; no thread runs yet.
            unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) };
        }
        if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
            // SAFETY: as above.
            unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024) };
        }
    }
}
