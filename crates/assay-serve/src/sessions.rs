//! The open interpreter sessions, by id: at most `max` at once, each closed once unused for
//! the idle time. What the routes do with them is `routes::sessions`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use assay_sandbox::Session;
use tokio::time::Instant;

use crate::error::ApiError;

/// One open session.
pub struct Live {
    pub session: Session,
    pub created: SystemTime,
    /// When a request last used it (monotonic: what expiry counts from).
    pub last_used: Mutex<Instant>,
    pub cells: std::sync::atomic::AtomicU64,
}

impl Live {
    /// Marks it used now.
    pub fn touch(&self) {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    /// When it was last used, on the wall clock (for listings).
    pub fn last_used_at(&self) -> SystemTime {
        let idle = self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .elapsed();
        SystemTime::now() - idle
    }
}

/// The open sessions, by id.
pub struct Sessions {
    pub open: Mutex<HashMap<String, Arc<Live>>>,
    /// Sessions being opened now: counted against the cap before they exist.
    pub opening: Mutex<usize>,
    pub max: usize,
    pub idle: Duration,
}

impl Sessions {
    /// At most `max` open at once; each closed after `idle` unused.
    pub fn new(max: usize, idle: Duration) -> Self {
        Sessions {
            open: Mutex::new(HashMap::new()),
            opening: Mutex::new(0),
            max,
            idle,
        }
    }

    /// Sessions open now.
    pub fn live(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    pub fn get(&self, id: &str) -> Result<Arc<Live>, ApiError> {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| {
                ApiError::not_found(format!(
                    "no session `{id}` (closed, expired after being idle, or never opened)"
                ))
            })
    }

    pub fn take(&self, id: &str) -> Option<Arc<Live>> {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id)
    }

    /// Takes out the sessions no request holds that have been unused for the idle time.
    pub fn expire_idle(&self) -> Vec<Arc<Live>> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let ids: Vec<String> = open
            .iter()
            .filter(|(_, live)| {
                Arc::strong_count(live) == 1
                    && live
                        .last_used
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .elapsed()
                        >= self.idle
            })
            .map(|(id, _)| id.clone())
            .collect();
        ids.iter().filter_map(|id| open.remove(id)).collect()
    }

    /// Closes every session (the service is stopping).
    pub async fn close_all(&self) {
        let all: Vec<Arc<Live>> = self
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, live)| live)
            .collect();
        for live in all {
            close(live).await;
        }
    }
}

/// Closes a session taken out of the map: at once if no request holds it, else when the last
/// one lets go (its sandbox is killed with it).
pub async fn close(live: Arc<Live>) {
    if let Ok(live) = Arc::try_unwrap(live) {
        live.session.close().await;
    }
}
