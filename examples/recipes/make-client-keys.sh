#!/bin/sh
# Recipe: the key pair and key set a private_key_jwt client needs, with openssl alone. Writes
# client-key.pem and client-key.json (the private key, as PEM and as the JWK the recipes read as
# KEYWAY_PRIVATE_JWK: keep both to the client) and client-jwks.json (the public key set the
# operator registers) into the current directory. Run: sh make-client-keys.sh
set -eu
umask 077
# An EC P-256 key (ES256).
openssl ecparam -name prime256v1 -genkey -noout -out client-key.pem
# JWK members are unpadded base64url (RFC 7518 6.2.1). A P-256 public key's DER ends with x and y,
# 32 bytes each; its private scalar d is bytes 8 to 39 of the key's SEC1 DER.
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
X=$(openssl ec -in client-key.pem -pubout -outform DER 2>/dev/null | tail -c 64 | head -c 32 | b64url)
Y=$(openssl ec -in client-key.pem -pubout -outform DER 2>/dev/null | tail -c 32 | b64url)
D=$(openssl ec -in client-key.pem -outform DER 2>/dev/null | head -c 39 | tail -c 32 | b64url)
KID=client-key-$(date -u +%Y%m%d)
printf '{"kty":"EC","crv":"P-256","x":"%s","y":"%s","d":"%s","kid":"%s"}\n' "$X" "$Y" "$D" "$KID" >client-key.json
printf '{"keys":[{"kty":"EC","crv":"P-256","x":"%s","y":"%s","kid":"%s","alg":"ES256","use":"sig"}]}\n' "$X" "$Y" "$KID" >client-jwks.json
echo "kid $KID: client-key.json (private, keep it) and client-jwks.json (public, register it)"
