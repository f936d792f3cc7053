//! The bounded queue in front of the engine. Work past what the engine runs at once waits
//! here, up to a bound; only past that bound is a request refused, with `503` and a
//! `Retry-After`, because the clients in use count a refusal as a failed answer or retry
//! blindly: waiting is what they handle best.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

/// Seconds a refused client is told to wait: about what a short job takes to free a place.
const RETRY_AFTER_SECONDS: u64 = 5;

/// Places for jobs: running or waiting to.
pub struct Admission {
    places: Arc<Semaphore>,
    capacity: usize,
}

/// One job's place, given back when dropped.
pub struct Ticket {
    _place: OwnedSemaphorePermit,
}

impl Admission {
    /// `capacity` places in all.
    pub fn new(capacity: usize) -> Self {
        Admission {
            places: Arc::new(Semaphore::new(capacity)),
            capacity,
        }
    }

    /// A place now, or `503` when every place is taken: for a request's own job.
    pub fn try_admit(&self) -> Result<Ticket, ApiError> {
        match self.places.clone().try_acquire_owned() {
            Ok(place) => Ok(Ticket { _place: place }),
            Err(_) => Err(ApiError::busy(RETRY_AFTER_SECONDS)),
        }
    }

    /// A place once one is free: for the items of a batch already admitted, which wait
    /// their turn rather than fail.
    pub async fn admit(&self) -> Ticket {
        let place = self
            .places
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        Ticket { _place: place }
    }

    /// Places taken now.
    pub fn taken(&self) -> usize {
        self.capacity - self.places.available_permits()
    }

    /// Places in all.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}
