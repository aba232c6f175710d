//! Fresh memory for large decoded columns. Touching a fresh page costs a page fault per
//! 4 KiB, and on a virtual machine that hands memory back to its host also a fault in the
//! host: first writes to fresh memory can cost more than decompressing into it. One
//! `madvise(MADV_POPULATE_WRITE)` call maps a whole buffer at once, before the decoder's
//! threads write into it.

/// Buffers smaller than this are left to the allocator (they mostly reuse freed memory).
const POPULATE_MIN_BYTES: usize = 1 << 20;

/// `n` copies of `zero` in a buffer whose pages are mapped in one system call when it is
/// large (Linux; elsewhere an ordinary `vec!`).
pub(crate) fn filled_vec<T: Copy>(zero: T, n: usize) -> Vec<T> {
    // `vec!` of an all-zero value asks the allocator for zeroed memory (calloc), which
    // does not write pages fresh from the kernel: they come zeroed when populated. The
    // decoder then writes each byte once, not after a memset of the whole buffer.
    let mut v = vec![zero; n];
    populate(&mut v);
    v
}

/// Maps the whole pages of `buffer` (memory this process owns) writable, at once.
#[cfg(target_os = "linux")]
fn populate<T>(buffer: &mut [T]) {
    const PAGE: usize = 4096;
    let bytes = std::mem::size_of_val(buffer);
    if bytes < POPULATE_MIN_BYTES {
        return;
    }
    let start = buffer.as_mut_ptr() as usize;
    let first = start.next_multiple_of(PAGE);
    let end = (start + bytes) / PAGE * PAGE;
    if end <= first {
        return;
    }
    // SAFETY: `first..end` lies within `buffer`, memory of this process's heap that the
    // caller holds exclusively; MADV_POPULATE_WRITE only maps its pages (it writes no
    // data and changes no contents). A failure (an old kernel without it) leaves the
    // pages to be faulted in on first write, as without the call.
    unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            end - first,
            libc::MADV_POPULATE_WRITE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn populate<T>(_buffer: &mut [T]) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filled_vec_holds_the_value_at_every_size() {
        // Below and above the populate threshold, and not a multiple of a page.
        for n in [0usize, 1, 4097, (POPULATE_MIN_BYTES / 8) * 3 + 5] {
            let v = filled_vec(7u64, n);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&x| x == 7));
            let z = filled_vec(0.0f32, n);
            assert!(z.iter().all(|&x| x == 0.0));
        }
    }
}
