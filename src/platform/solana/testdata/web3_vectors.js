// Prints the reference vectors of testing/vectors.h, made with @solana/web3.js 1.99 and
// @solana/spl-token 0.4 (npm install @solana/web3.js@1 @solana/spl-token; node web3_vectors.js).
const w = require('@solana/web3.js');
const spl = require('@solana/spl-token');
const bs58 = require('bs58').default || require('bs58');
const crypto = require('crypto');
const out = {};
const hex = b => Buffer.from(b).toString('hex');
const sha = s => crypto.createHash('sha256').update(s).digest();
// base58
out.base58 = [[], [0], [0,0,0,1], [0x61], [0xff,0xff], [...sha('b58')], [0,0,...sha('b58z').subarray(0,10)]].map(a => [hex(a), bs58.encode(Buffer.from(a))]);
// keypairs
const seed1 = Buffer.from([...Array(32).keys()].map(i => i + 1));
const seed2 = Buffer.from([...Array(32).keys()].map(i => 100 + i));
const seed3 = Buffer.from([...Array(32).keys()].map(i => 200 + i));
const k1 = w.Keypair.fromSeed(seed1), k2 = w.Keypair.fromSeed(seed2), k3 = w.Keypair.fromSeed(seed3);
out.keys = [k1, k2, k3].map(k => [hex(k.secretKey), k.publicKey.toBase58()]);
const USDC = new w.PublicKey('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v');
const TOKEN = spl.TOKEN_PROGRAM_ID, T22 = spl.TOKEN_2022_PROGRAM_ID, ATA = spl.ASSOCIATED_TOKEN_PROGRAM_ID;
const MEMO = new w.PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
out.programs = {token: TOKEN.toBase58(), t22: T22.toBase58(), ata: ATA.toBase58(), system: w.SystemProgram.programId.toBase58()};
out.ata = [
  [k1.publicKey.toBase58(), USDC.toBase58(), TOKEN.toBase58(), spl.getAssociatedTokenAddressSync(USDC, k1.publicKey).toBase58()],
  [k2.publicKey.toBase58(), USDC.toBase58(), TOKEN.toBase58(), spl.getAssociatedTokenAddressSync(USDC, k2.publicKey).toBase58()],
  [k1.publicKey.toBase58(), USDC.toBase58(), T22.toBase58(), spl.getAssociatedTokenAddressSync(USDC, k1.publicKey, false, T22).toBase58()],
];
// PDAs
const pdaSeeds = [[], [Buffer.from('hello')], [Buffer.from('payout'), k1.publicKey.toBuffer()], [Buffer.alloc(32, 7), Buffer.from([1]), Buffer.from('')]];
out.pda = pdaSeeds.map(s => { const [a, b] = w.PublicKey.findProgramAddressSync(s, TOKEN); return [s.map(hex), TOKEN.toBase58(), a.toBase58(), b, w.PublicKey.isOnCurve(a.toBytes())]; });
// createProgramAddress with each bump 255..240 for seed "hello": on-curve ones throw
out.cpa = [];
for (let b = 255; b >= 230; b--) { try { out.cpa.push([b, w.PublicKey.createProgramAddressSync([Buffer.from('hello'), Buffer.from([b])], MEMO).toBase58()]); } catch (e) { out.cpa.push([b, null]); } }
// curve
out.curve = [];
for (let i = 0; i < 48; i++) { const b = sha('curve' + i); out.curve.push([hex(b), w.PublicKey.isOnCurve(b)]); }
const special = [Buffer.alloc(32, 0), Buffer.alloc(32, 0xff), Buffer.concat([Buffer.from([1]), Buffer.alloc(31)]), Buffer.concat([Buffer.from([1]), Buffer.alloc(30), Buffer.from([0x80])])];
out.special = special.map(b => [hex(b), w.PublicKey.isOnCurve(b)]);
// transactions
const bh = bs58.encode(sha('blockhash'));
out.blockhash = bh;
function build(payer, owner, signers, memoSigners) {
  const srcAta = spl.getAssociatedTokenAddressSync(USDC, owner.publicKey);
  const dstAta = spl.getAssociatedTokenAddressSync(USDC, k2.publicKey);
  const ixs = [
    spl.createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, dstAta, k2.publicKey, USDC),
    spl.createTransferCheckedInstruction(srcAta, USDC, dstAta, owner.publicKey, 1234567n, 6),
    new w.TransactionInstruction({programId: MEMO, keys: memoSigners.map(k => ({pubkey: k.publicKey, isSigner: true, isWritable: false})), data: Buffer.from('gpunex payout po_01JD3XYZ', 'utf8')}),
  ];
  const msg = new w.TransactionMessage({payerKey: payer.publicKey, recentBlockhash: bh, instructions: ixs}).compileToLegacyMessage();
  const vt = new w.VersionedTransaction(msg); vt.sign(signers);
  const lt = new w.Transaction({feePayer: payer.publicKey, recentBlockhash: bh}); ixs.forEach(i => lt.add(i)); lt.sign(...signers);
  return {src_ata: srcAta.toBase58(), dst_ata: dstAta.toBase58(),
    versioned_hex: hex(vt.serialize()), versioned_b64: Buffer.from(vt.serialize()).toString('base64'), versioned_sig: bs58.encode(vt.signatures[0]),
    legacy_hex: hex(lt.serialize()), message_hex: hex(msg.serialize()),
    keys: msg.accountKeys.map(k => k.toBase58()), legacy_keys: lt.compileMessage().accountKeys.map(k => k.toBase58())};
}
out.tx1 = build(k1, k1, [k1], [k1]);
out.tx2 = build(k3, k1, [k3, k1], [k1]);
console.log(JSON.stringify(out, null, 1));
