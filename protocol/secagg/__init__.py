"""Secure aggregation (Bonawitz et al., CCS 2017; SecAgg+ of Bell et al., CCS 2020).

The collector learns only the sum of the surviving devices' fixed-point inputs. The pure
building blocks live here: ``crypto`` (X25519, HKDF-SHA256, AES-GCM, the AES-CTR mask
PRG, Ed25519), ``shamir`` (t-of-n sharing over GF(2^521 - 1)), ``encoding`` (validated
fixed-point encoding and arithmetic mod 2^32 / 2^64) and ``graph`` (full and Harary
sharing graphs); the client and server state machines are built on them.
"""
