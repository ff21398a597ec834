//! Server identity: a server nkey made at start-up, whose public key (`N` + 55 base32
//! characters) is the server id, as nats-server's; it signs what the server issues (auth
//! callout requests). And the 22-character random names nats-server makes with its NUIDs
//! (event ids, dynamic cluster names).

use rand::Rng;

/// A fresh server key pair; its public key is the server id.
pub fn new_server_keys() -> nkeys::KeyPair {
    nkeys::KeyPair::new_server()
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
    fn server_id_is_a_server_nkey() {
        let id = super::new_server_keys().public_key();
        assert!(nkeys::KeyPair::from_public_key(&id).is_ok());
        assert_eq!(id.len(), 56);
        assert!(id.starts_with('N'));
        assert!(id
            .bytes()
            .all(|byte| byte.is_ascii_uppercase() || (b'2'..=b'7').contains(&byte)));
    }
}
