//! Pages of list results. A page token is the opaque (base64) key of the last item of the
//! previous page, so pages stay stable while items are added or removed.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::{Result, RuntimeError};

pub const DEFAULT_PAGE_SIZE: usize = 50;
pub const MAX_PAGE_SIZE: usize = 1_000;

#[derive(Clone, Debug, Default)]
pub struct PageRequest {
    /// 0 means the default size; larger than the maximum is capped.
    pub size: usize,
    pub token: Option<String>,
}

impl PageRequest {
    pub fn first(size: usize) -> Self {
        Self { size, token: None }
    }

    pub fn effective_size(&self) -> usize {
        match self.size {
            0 => DEFAULT_PAGE_SIZE,
            n => n.min(MAX_PAGE_SIZE),
        }
    }

    /// The key the previous page ended at.
    pub fn after_key(&self) -> Result<Option<String>> {
        let Some(token) = self.token.as_deref().filter(|t| !t.is_empty()) else {
            return Ok(None);
        };
        let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| not_issued())?;
        String::from_utf8(bytes).map(Some).map_err(|_| not_issued())
    }
}

fn not_issued() -> RuntimeError {
    RuntimeError::invalid("page_token", "not a token this server issued for this list")
}

#[derive(Clone, Debug)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Set when more items follow.
    pub next_token: Option<String>,
}

/// The token of a page that ended at the item whose key is `key`.
pub fn token_for(key: &str) -> String {
    URL_SAFE_NO_PAD.encode(key.as_bytes())
}

/// Pages an ordered sequence: skips the items that do not come after the token's key
/// (`comes_after(item, key)` tells, so a deleted last item still positions the page),
/// keeps those `filter` accepts, and stops once the page is full. A token whose key
/// `parse_key` cannot read was not issued for this list: it is refused rather than
/// answered with an empty page.
pub(crate) fn paginate<T, K>(
    items: impl IntoIterator<Item = T>,
    request: &PageRequest,
    key: impl Fn(&T) -> String,
    parse_key: impl Fn(&str) -> Option<K>,
    comes_after: impl Fn(&T, &K) -> bool,
    mut filter: impl FnMut(&T) -> bool,
) -> Result<Page<T>> {
    let after = match request.after_key()? {
        Some(text) => Some(parse_key(&text).ok_or_else(not_issued)?),
        None => None,
    };
    let size = request.effective_size();
    let mut page = Vec::with_capacity(size.min(64));
    let mut more = false;
    let candidates = items
        .into_iter()
        .filter(|item| after.as_ref().is_none_or(|k| comes_after(item, k)));
    for item in candidates {
        if !filter(&item) {
            continue;
        }
        if page.len() == size {
            more = true;
            break;
        }
        page.push(item);
    }
    let next_token = if more {
        page.last().map(|last| token_for(&key(last)))
    } else {
        None
    };
    Ok(Page {
        items: page,
        next_token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page_of(items: &[u32], size: usize, token: Option<String>) -> Page<u32> {
        let request = PageRequest { size, token };
        paginate(
            items.iter().copied(),
            &request,
            |n| n.to_string(),
            |k| k.parse::<u32>().ok(),
            |n, k| n > k,
            |n| n % 2 == 0,
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn pages_filter_and_resume_after_a_removed_item() {
        let items = [2, 3, 4, 6, 8, 10];
        let first = page_of(&items, 2, None);
        assert_eq!(first.items, vec![2, 4]);
        let second = page_of(&items, 2, first.next_token.clone());
        assert_eq!(second.items, vec![6, 8]);
        let last = page_of(&items, 2, second.next_token.clone());
        assert_eq!(last.items, vec![10]);
        assert!(last.next_token.is_none());
        // The item the token names is gone: the page still starts after it.
        let without_four = [2, 3, 6, 8, 10];
        assert_eq!(
            page_of(&without_four, 2, first.next_token).items,
            vec![6, 8]
        );
    }

    #[test]
    fn a_forged_token_is_invalid_argument() {
        // Not base64, and base64 of a key this list never issues ("forged").
        for token in ["!!", "Zm9yZ2Vk"] {
            let request = PageRequest {
                size: 1,
                token: Some(token.into()),
            };
            let result = paginate(
                [1u32],
                &request,
                |n| n.to_string(),
                |k| k.parse::<u32>().ok(),
                |_, _| true,
                |_| true,
            );
            assert!(
                matches!(result, Err(RuntimeError::InvalidArgument { ref field, .. }) if field == "page_token"),
                "{token}: {result:?}"
            );
        }
    }
}
