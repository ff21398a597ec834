//! Server identity: a 56-character nkey-style server id (`N` + base32), as nats-server shows;
//! and the 22-character random names nats-server makes with its NUIDs (event ids, dynamic
//! cluster names).

use rand::Rng;

const BASE32_ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// A fresh random server id: `N` followed by 55 base32 characters.
pub fn new_server_id() -> String {
    let mut random = rand::thread_rng();
    let mut id = String::with_capacity(56);
    id.push('N');
    for _ in 0..55 {
        id.push(BASE32_ALPHABET[random.gen_range(0..32)] as char);
    }
    id
}

/// 22 random alphanumerics, shaped as nats-server's NUIDs.
pub fn new_nuid() -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut random = rand::thread_rng();
    (0..22)
        .map(|_| ALPHABET[random.gen_range(0..ALPHABET.len())] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn server_id_looks_like_an_nkey() {
        let id = super::new_server_id();
        assert_eq!(id.len(), 56);
        assert!(id.starts_with('N'));
        assert!(id
            .bytes()
            .all(|byte| byte.is_ascii_uppercase() || (b'2'..=b'7').contains(&byte)));
    }
}
