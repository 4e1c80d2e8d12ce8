// LiteSVM's transaction errors in the two forms the Solana JSON-RPC API uses: the JSON
// value of `err` (serde's form of TransactionError: "BlockhashNotFound",
// {"InstructionError":[0,{"Custom":1}]}, ...) and the sentence of a failed preflight's
// message ("Error processing Instruction 0: custom program error: 0x1").
//
// LiteSVM hands fieldless errors over as bare numbers (its TypeScript "const enum"s have no
// run-time object), and the others as native class instances; the name lists below follow
// the order of those enums in litesvm 1.5.0's dist/internal.d.ts.

const TX_ERRORS = [
  "AccountInUse",
  "AccountLoadedTwice",
  "AccountNotFound",
  "ProgramAccountNotFound",
  "InsufficientFundsForFee",
  "InvalidAccountForFee",
  "AlreadyProcessed",
  "BlockhashNotFound",
  "CallChainTooDeep",
  "MissingSignatureForFee",
  "InvalidAccountIndex",
  "SignatureFailure",
  "InvalidProgramForExecution",
  "SanitizeFailure",
  "ClusterMaintenance",
  "AccountBorrowOutstanding",
  "WouldExceedMaxBlockCostLimit",
  "UnsupportedVersion",
  "InvalidWritableAccount",
  "WouldExceedMaxAccountCostLimit",
  "WouldExceedAccountDataBlockLimit",
  "TooManyAccountLocks",
  "AddressLookupTableNotFound",
  "InvalidAddressLookupTableOwner",
  "InvalidAddressLookupTableData",
  "InvalidAddressLookupTableIndex",
  "InvalidRentPayingAccount",
  "WouldExceedMaxVoteCostLimit",
  "WouldExceedAccountDataTotalLimit",
  "MaxLoadedAccountsDataSizeExceeded",
  "ResanitizationNeeded",
  "InvalidLoadedAccountsDataSizeLimit",
  "UnbalancedTransaction",
  "ProgramCacheHitMaxLimit",
  "CommitCancelled",
];

const INSTRUCTION_ERRORS = [
  "GenericError",
  "InvalidArgument",
  "InvalidInstructionData",
  "InvalidAccountData",
  "AccountDataTooSmall",
  "InsufficientFunds",
  "IncorrectProgramId",
  "MissingRequiredSignature",
  "AccountAlreadyInitialized",
  "UninitializedAccount",
  "UnbalancedInstruction",
  "ModifiedProgramId",
  "ExternalAccountLamportSpend",
  "ExternalAccountDataModified",
  "ReadonlyLamportChange",
  "ReadonlyDataModified",
  "DuplicateAccountIndex",
  "ExecutableModified",
  "RentEpochModified",
  "NotEnoughAccountKeys",
  "AccountDataSizeChanged",
  "AccountNotExecutable",
  "AccountBorrowFailed",
  "AccountBorrowOutstanding",
  "DuplicateAccountOutOfSync",
  "InvalidError",
  "ExecutableDataModified",
  "ExecutableLamportChange",
  "ExecutableAccountNotRentExempt",
  "UnsupportedProgramId",
  "CallDepth",
  "MissingAccount",
  "ReentrancyNotAllowed",
  "MaxSeedLengthExceeded",
  "InvalidSeeds",
  "InvalidRealloc",
  "ComputationalBudgetExceeded",
  "PrivilegeEscalation",
  "ProgramEnvironmentSetupFailure",
  "ProgramFailedToComplete",
  "ProgramFailedToCompile",
  "Immutable",
  "IncorrectAuthority",
  "AccountNotRentExempt",
  "InvalidAccountOwner",
  "ArithmeticOverflow",
  "UnsupportedSysvar",
  "IllegalOwner",
  "MaxAccountsDataAllocationsExceeded",
  "MaxAccountsExceeded",
  "MaxInstructionTraceLengthExceeded",
  "BuiltinProgramsMustConsumeComputeUnits",
  "BorshIoError",
];

// The Display texts of the errors a payment client is likely to meet (agave's wording).
const TX_ERROR_TEXT = {
  AccountNotFound: "Attempt to debit an account but found no record of a prior credit.",
  ProgramAccountNotFound: "Attempt to load a program that does not exist",
  InsufficientFundsForFee: "Insufficient funds for fee",
  InvalidAccountForFee: "This account may not be used to pay transaction fees",
  AlreadyProcessed: "This transaction has already been processed",
  BlockhashNotFound: "Blockhash not found",
  MissingSignatureForFee: "Transaction requires a fee but has no signature present",
  SignatureFailure: "Transaction did not pass signature verification",
  SanitizeFailure: "Transaction failed to sanitize accounts offsets correctly",
  InvalidAccountIndex: "Transaction contains an invalid account reference",
};
const INSTRUCTION_ERROR_TEXT = {
  GenericError: "generic instruction error",
  InvalidArgument: "invalid program argument",
  InvalidInstructionData: "invalid instruction data",
  InvalidAccountData: "invalid account data for instruction",
  AccountDataTooSmall: "account data too small for instruction",
  InsufficientFunds: "insufficient funds for instruction",
  IncorrectProgramId: "incorrect program id for instruction",
  MissingRequiredSignature: "missing required signature for instruction",
  AccountAlreadyInitialized: "instruction requires an uninitialized account",
  UninitializedAccount: "instruction requires an initialized account",
  NotEnoughAccountKeys: "insufficient account keys for instruction",
  IllegalOwner: "Provided owner is not allowed",
  InvalidAccountOwner: "Invalid account owner",
  PrivilegeEscalation: "Cross-program invocation with unauthorized signer or writable account",
};

function instructionErrorJson(e) {
  if (typeof e === "number") return INSTRUCTION_ERRORS[e] ?? `InstructionError${e}`;
  switch (e?.constructor?.name) {
    case "InstructionErrorCustom":
      return { Custom: e.code };
    case "InstructionErrorBorshIo":
      return { BorshIoError: e.msg };
    default:
      return String(e);
  }
}

/** The JSON-RPC `err` value of a LiteSVM error (`FailedTransactionMetadata.err()`). */
export function txErrorJson(e) {
  if (typeof e === "number") return TX_ERRORS[e] ?? `TransactionError${e}`;
  switch (e?.constructor?.name) {
    case "TransactionErrorInstructionError":
      return { InstructionError: [e.index, instructionErrorJson(e.err())] };
    case "TransactionErrorDuplicateInstruction":
      return { DuplicateInstruction: e.index };
    case "TransactionErrorInsufficientFundsForRent":
      return { InsufficientFundsForRent: { account_index: e.accountIndex } };
    case "TransactionErrorProgramExecutionTemporarilyRestricted":
      return { ProgramExecutionTemporarilyRestricted: { account_index: e.accountIndex } };
    default:
      return String(e);
  }
}

/** The sentence a node writes for `err` (the JSON form). */
export function txErrorText(err) {
  if (typeof err === "string") return TX_ERROR_TEXT[err] ?? err;
  if (err.InstructionError) {
    const [index, ie] = err.InstructionError;
    let text;
    if (typeof ie === "string") text = INSTRUCTION_ERROR_TEXT[ie] ?? ie;
    else if (ie.Custom !== undefined) text = `custom program error: 0x${ie.Custom.toString(16)}`;
    else text = JSON.stringify(ie);
    return `Error processing Instruction ${index}: ${text}`;
  }
  if (err.InsufficientFundsForRent) {
    return (
      `Transaction results in an account (${err.InsufficientFundsForRent.account_index}) ` +
      "with insufficient funds for rent"
    );
  }
  return JSON.stringify(err);
}

/** A JSON-RPC error answer: {code, message, data?}. */
export class RpcError extends Error {
  constructor(code, message, data = undefined) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

export const INVALID_PARAMS = -32602;
export const METHOD_NOT_FOUND = -32601;
// The Solana server codes (agave's rpc_custom_error.rs).
export const SEND_TRANSACTION_PREFLIGHT_FAILURE = -32002;
export const SIGNATURE_VERIFICATION_FAILURE = -32003;
export const UNSUPPORTED_TRANSACTION_VERSION = -32015;
