//! Reading kernel files: every helper names the file in its error and
//! treats a missing file the way its caller asks.

use crate::error::{Error, Result};
use corral_core::CpuSet;
use std::io;
use std::path::Path;

/// Whether an error means "this file is not there" — absent, or a device
/// attribute that the kernel refuses to show (ENODEV) for an offline CPU.
fn is_absent(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || e.raw_os_error() == Some(rustix::io::Errno::NODEV.raw_os_error())
}

/// The file's contents.
pub(crate) fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

/// The file's contents, or `None` when it does not exist.
pub(crate) fn read_opt(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if is_absent(&e) => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Parses `text`, read from `path`, as a cpulist.
pub(crate) fn parse_cpulist(path: &Path, text: &str) -> Result<CpuSet> {
    CpuSet::parse(text).map_err(|error| Error::CpuList {
        path: path.to_path_buf(),
        error,
    })
}

/// A cpulist file that must exist.
pub(crate) fn read_cpulist(path: &Path) -> Result<CpuSet> {
    parse_cpulist(path, &read(path)?)
}

/// A cpulist file that may be absent.
pub(crate) fn read_cpulist_opt(path: &Path) -> Result<Option<CpuSet>> {
    read_opt(path)?
        .map(|text| parse_cpulist(path, &text))
        .transpose()
}

/// A file holding one signed decimal integer; `None` when absent.
pub(crate) fn read_i64_opt(path: &Path) -> Result<Option<i64>> {
    read_opt(path)?
        .map(|text| {
            text.trim()
                .parse()
                .map_err(|_| Error::parse(path, &text, "an integer"))
        })
        .transpose()
}

/// A file holding an id where the kernel writes -1 for "none"; `None` when
/// absent or negative.
pub(crate) fn read_id_opt(path: &Path) -> Result<Option<u32>> {
    Ok(read_i64_opt(path)?.and_then(|v| u32::try_from(v).ok()))
}

/// A file holding one unsigned decimal integer; `None` when absent.
pub(crate) fn read_u64_opt(path: &Path) -> Result<Option<u64>> {
    read_opt(path)?
        .map(|text| {
            text.trim()
                .parse()
                .map_err(|_| Error::parse(path, &text, "an unsigned integer"))
        })
        .transpose()
}
