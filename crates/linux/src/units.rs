//! systemd's units, through its D-Bus API (`org.freedesktop.systemd1`):
//! which unit a process is in, and a unit's `CPUWeight`, read and changed
//! at runtime (`SetUnitProperties(unit, runtime = true, …)`: systemd
//! writes the cgroup and keeps the value until the next boot or until it
//! is changed back). On a systemd host this is the only way corral changes
//! a unit's weight: systemd is the one writer of its cgroups.
//!
//! Blocking calls (zbus's blocking API); the daemon makes them only when a
//! placement changes, never in a sampling pass.

use crate::error::{Error, Result};
use zbus::blocking::Connection;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

const DEST: &str = "org.freedesktop.systemd1";
const MANAGER_PATH: &str = "/org/freedesktop/systemd1";
const MANAGER: &str = "org.freedesktop.systemd1.Manager";

/// `CPUWeight` not set (`CGROUP_WEIGHT_INVALID`): the unit's cgroup has the
/// kernel's default weight, 100. Writing it back unsets the property.
pub const WEIGHT_UNSET: u64 = u64::MAX;

/// The kernel's default `cpu.weight` (`CGROUP_WEIGHT_DFL`).
pub const WEIGHT_DEFAULT: u64 = 100;

/// How long a call waits for systemd.
pub const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// A connection to systemd on the system bus.
pub struct Systemd {
    conn: Connection,
}

impl std::fmt::Debug for Systemd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Systemd")
    }
}

fn dbus(call: &'static str, e: zbus::Error) -> Error {
    Error::Syscall {
        call,
        error: std::io::Error::other(e.to_string()),
    }
}

/// The D-Bus interface that holds a unit's cgroup properties, from its
/// name's suffix.
fn interface_of(unit: &str) -> Option<&'static str> {
    let suffix = unit.rsplit('.').next()?;
    Some(match suffix {
        "service" => "org.freedesktop.systemd1.Service",
        "scope" => "org.freedesktop.systemd1.Scope",
        "slice" => "org.freedesktop.systemd1.Slice",
        "socket" => "org.freedesktop.systemd1.Socket",
        "mount" => "org.freedesktop.systemd1.Mount",
        "swap" => "org.freedesktop.systemd1.Swap",
        _ => return None,
    })
}

impl Systemd {
    /// Connects to the system bus.
    /// Each call waits at most [`TIMEOUT`] for systemd's answer: the
    /// daemon's loop must not hang on a busy or restarting systemd.
    pub fn connect() -> Result<Systemd> {
        zbus::blocking::connection::Builder::system()
            .and_then(|b| b.method_timeout(TIMEOUT).build())
            .map(|conn| Systemd { conn })
            .map_err(|e| dbus("D-Bus system bus", e))
    }

    fn property(&self, path: &OwnedObjectPath, iface: &str, name: &str) -> Result<OwnedValue> {
        let reply = self
            .conn
            .call_method(
                Some(DEST),
                path,
                Some("org.freedesktop.DBus.Properties"),
                "Get",
                &(iface, name),
            )
            .map_err(|e| dbus("org.freedesktop.DBus.Properties.Get", e))?;
        let v: OwnedValue = reply
            .body()
            .deserialize()
            .map_err(|e| dbus("org.freedesktop.DBus.Properties.Get", e))?;
        Ok(v)
    }

    /// The unit process `pid` belongs to (`GetUnitByPID`), by name; `None`
    /// when systemd knows no unit for it (a process that exited).
    pub fn unit_of_pid(&self, pid: u32) -> Result<Option<String>> {
        let reply = match self.conn.call_method(
            Some(DEST),
            MANAGER_PATH,
            Some(MANAGER),
            "GetUnitByPID",
            &(pid,),
        ) {
            Ok(r) => r,
            Err(zbus::Error::MethodError(name, _, _))
                if name.as_str() == "org.freedesktop.systemd1.NoUnitForPID" =>
            {
                return Ok(None)
            }
            Err(e) => return Err(dbus("GetUnitByPID", e)),
        };
        let path: OwnedObjectPath = reply
            .body()
            .deserialize()
            .map_err(|e| dbus("GetUnitByPID", e))?;
        let id = self.property(&path, "org.freedesktop.systemd1.Unit", "Id")?;
        let id: String = id
            .try_into()
            .map_err(|e: zbus::zvariant::Error| dbus("Unit.Id", e.into()))?;
        Ok(Some(id))
    }

    /// A unit's `CPUWeight` property ([`WEIGHT_UNSET`] when not set).
    pub fn cpu_weight(&self, unit: &str) -> Result<u64> {
        let iface = interface_of(unit).ok_or_else(|| Error::Syscall {
            call: "CPUWeight",
            error: std::io::Error::other(format!("{unit}: a unit of this type has no CPUWeight")),
        })?;
        let reply = self
            .conn
            .call_method(Some(DEST), MANAGER_PATH, Some(MANAGER), "GetUnit", &(unit,))
            .map_err(|e| dbus("GetUnit", e))?;
        let path: OwnedObjectPath = reply.body().deserialize().map_err(|e| dbus("GetUnit", e))?;
        let v = self.property(&path, iface, "CPUWeight")?;
        u64::try_from(v).map_err(|e| dbus("CPUWeight", e.into()))
    }

    /// Sets a unit's `CPUWeight` until the next boot (runtime = true);
    /// [`WEIGHT_UNSET`] unsets it.
    /// A unit systemd no longer has (a transient unit collected) is not
    /// an error: there is nothing left to set.
    pub fn set_cpu_weight(&self, unit: &str, weight: u64) -> Result<()> {
        let props: Vec<(&str, Value)> = vec![("CPUWeight", Value::U64(weight))];
        match self.conn.call_method(
            Some(DEST),
            MANAGER_PATH,
            Some(MANAGER),
            "SetUnitProperties",
            &(unit, true, props),
        ) {
            Ok(_) => Ok(()),
            Err(zbus::Error::MethodError(name, _, _))
                if name.as_str() == "org.freedesktop.systemd1.NoSuchUnit" =>
            {
                Ok(())
            }
            Err(e) => Err(dbus("SetUnitProperties", e)),
        }
    }
}

/// The weight a unit's cgroup has with this `CPUWeight` property.
pub fn effective_weight(property: u64) -> u64 {
    if property == WEIGHT_UNSET {
        WEIGHT_DEFAULT
    } else {
        property
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_types_name_their_interface_and_unset_means_the_default() {
        assert_eq!(
            interface_of("corral-test-hog1.service"),
            Some("org.freedesktop.systemd1.Service")
        );
        assert_eq!(
            interface_of("session-2.scope"),
            Some("org.freedesktop.systemd1.Scope")
        );
        assert_eq!(interface_of("multi-user.target"), None);
        assert_eq!(effective_weight(WEIGHT_UNSET), 100);
        assert_eq!(effective_weight(5), 5);
    }
}
