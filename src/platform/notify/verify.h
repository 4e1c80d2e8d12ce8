// Email verification (docs/security.md, "Email"): gpunexd mails an address for an
// account only once the address's owner has opened a signed, expiring link sent to it.
//
// Every email the domain enqueues names its account (notify.h Email::user_id). Until that
// account's address is verified, EnqueueEmail keeps the email 'held' and records the
// address here; a link goes to it (at sign-up at once, for any other address on the
// outbox sender's next pass), and opening the link sends what waited (held emails older
// than kHeldEmailLifetime expire instead). The verification email is the only one that
// goes to an unverified address. Each account gets at most kMaxEmailsPerAccountPerHour
// emails an hour, verification emails included; the rest are 'suppressed'.
//
// A link is "<public_url>/#/verify-email?token=<token>", the token being
// base64url("<user id>\n<address>\n<expiry, Unix seconds>") "." base64url(HMAC-SHA-256)
// under a 256-bit key kept in the database (table signing_keys), so every instance
// checks every link and nothing per link is stored.
//
// Thread-safety: EmailVerifier is immutable after Open and safe to share.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "platform/store/db.h"

namespace gpunex::platform::notify {

inline constexpr std::string_view kVerificationKind = "email.verify";
inline constexpr int64_t kMaxEmailsPerAccountPerHour = 30;
inline constexpr Duration kHeldEmailLifetime = std::chrono::hours(24 * 7);

struct VerifierOptions {
  std::string public_url;                    // before "/#/verify-email?token=..."
  std::string mail_domain = "gpunex.local";  // Message-ID domain
  Duration link_lifetime = std::chrono::hours(48);
  // A new link for an address waits this long after the previous one.
  Duration resend_after = std::chrono::minutes(10);
  const Clock* clock = &SystemClock();
  std::function<void()> wake_outbox;  // after a commit that enqueued mail; may be empty
  // The account's own address in lower case, none when there is no such account, read in
  // the caller's transaction. Required: the accounts folder owns the users and depends on
  // this one, so it passes its reader in (accounts::AccountEmail).
  std::function<StatusOr<std::optional<std::string>>(store::Tx&, const std::string& user_id)>
      account_email;
};

// One of an account's addresses, as its owner sees it.
struct AddressState {
  std::string address;
  bool account = false;  // the account's own address (else e.g. an application's contact)
  std::optional<Timestamp> verified_at;
  std::optional<Timestamp> last_sent_at;  // the latest link
  int64_t held_emails = 0;                // waiting for the verification
};

// What a verified link was for.
struct Verified {
  std::string user_id;
  std::string address;
  bool already = false;  // it had been verified before
  int64_t released = 0;  // held emails now on their way
};

class EmailVerifier {
 public:
  // Loads the signing key from `db`, making it the first time. Fails with
  // kInvalidArgument without options.account_email, else with the database's status.
  static StatusOr<std::unique_ptr<EmailVerifier>> Open(store::Database& db,
                                                       VerifierOptions options);

  // Sends a link to (user_id, address) in `tx`, recording the address for the account if
  // new; nothing when the address is verified for it already. Bypasses the hold, not the
  // hourly limit.
  Status SendLink(store::Tx& tx, Timestamp now, const std::string& user_id,
                  std::string_view address) const;

  // Tells the owner of an existing account that someone signed up with its address (sign-up
  // answers the same for taken and free addresses; the owner learns of it here).
  Status TellOwnerOfSignUp(store::Tx& tx, Timestamp now, const std::string& user_id,
                           std::string_view address) const;

  // Checks a link's token and marks its address verified for its account, releasing the
  // held emails. Field error on "token" when it is malformed or its signature wrong ("is not
  // a valid verification link") or when it expired ("has expired ..."); with the
  // database's status otherwise.
  StatusOr<Verified> Verify(store::Database& db, std::string_view token) const;

  // A new link to one of the user's recorded addresses. kNotFound when it is not one;
  // kFailedPrecondition when it is verified; kResourceExhausted within resend_after of the
  // previous link, storing the seconds to wait in `*retry_after_s` (when not null).
  Status Resend(store::Database& db, const std::string& user_id, std::string_view address,
                int64_t* retry_after_s = nullptr) const;

  // The user's recorded addresses, the account's own first.
  StatusOr<std::vector<AddressState>> List(store::Database& db, const std::string& user_id) const;
  // Whether `address` is verified for `user_id`.
  StatusOr<bool> IsVerified(store::Database& db, const std::string& user_id,
                            std::string_view address) const;

  // The outbox sender's pass: links to recorded addresses that never had one (at most
  // `limit`), and expiry of emails held longer than kHeldEmailLifetime.
  Status SendDueLinks(store::Database& db, int64_t limit = 100) const;

  // The token of a link for (user_id, address) that expires at `expires` (tests).
  std::string MakeToken(const std::string& user_id, std::string_view address,
                        Timestamp expires) const;

  // Records `address` as verified for `user_id` in `tx` without a link: an operator made
  // the account (`gpunexd admin create`) and vouches for it.
  static Status MarkVerified(store::Tx& tx, Timestamp now, const std::string& user_id,
                             std::string_view address);

 private:
  EmailVerifier(std::string key, VerifierOptions options);

  std::string key_;
  VerifierOptions options_;
};

}  // namespace gpunex::platform::notify
