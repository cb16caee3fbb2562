"""What every rule is handed and what every call and start passes: the `Backend` (settings,
geography, storage, signer, one database connection per thread) and the guards over the store
(`keystore`: what a key may do; `nodes`: when nodes disagree; `chaos`: when a chaos rule fires;
`outages`: which database and storage faults are a 503).
"""
