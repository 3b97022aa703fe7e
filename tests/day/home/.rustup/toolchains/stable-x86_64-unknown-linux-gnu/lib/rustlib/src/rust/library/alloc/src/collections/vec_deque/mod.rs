//! A double-ended queue (deque) implemented with a growable ring buffer.
//!
//! This queue has *O*(1) amortized inserts and removals from both ends of the
//! container. It also has *O*(1) indexing like a vector.

#![stable(feature = "rust1", since = "1.0.0")]

/// A double-ended queue implemented with a growable ring buffer.
///
/// The "default" usage of this type as a queue is to use [`push_back`] to add to
/// the queue, and [`pop_front`] to remove from the queue.
#[stable(feature = "rust1", since = "1.0.0")]
pub struct VecDeque<T, A: Allocator = Global> {
    head: usize,
    len: usize,
    buf: RawVec<T, A>,
}

impl<T> VecDeque<T> {
    /// Creates an empty deque with space for at least `capacity` elements.
    #[stable(feature = "rust1", since = "1.0.0")]
    pub fn with_capacity(capacity: usize) -> VecDeque<T> {
        Self::with_capacity_in(capacity, Global)
    }
}

impl<T, A: Allocator> VecDeque<T, A> {
    /// Removes the first element and returns it, or `None` if the deque is empty.
    #[stable(feature = "rust1", since = "1.0.0")]
    pub fn pop_front(&mut self) -> Option<T> { /* ... */ }

    /// Appends an element to the back of the deque.
    #[stable(feature = "rust1", since = "1.0.0")]
    pub fn push_back(&mut self, value: T) { /* ... */ }
}
