//! Locks that outlive a panic. Every lock here guards state that stays consistent between
//! statements (a map, a counter, a queue, a cache), so a panic elsewhere while it was held
//! leaves nothing half-done: the next user takes the lock as it is instead of panicking in
//! turn.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, recovering it if a panicking thread held it.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads through `lock`, recovering it if a panicking thread held it.
pub fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Writes through `lock`, recovering it if a panicking thread held it.
pub fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
