// /api/v1/me/ssh-keys: the account's SSH public keys (README.md in this folder).
#include "platform/api/api.h"
#include "platform/sshkeys/ssh_key.h"
#include "platform/sshkeys/ssh_keys.h"
#include "platform/sshkeys/ssh_keys_module.h"

namespace gpunex::platform::sshkeys {

namespace {

json::object KeyJson(const SshKey& k) {
  return {{"id", k.id},
          {"name", k.name},
          {"type", k.type},
          {"bits", k.bits},
          {"fingerprint", k.fingerprint},
          {"public_key", k.public_key},
          {"created_at", FormatRfc3339(k.created_at)}};
}

}  // namespace

void RegisterRoutes(http::Router& r, const api::ApiContext& ctx) {
  SshKeys& keys = ctx.services.Get<SshKeys>();

  r.Add("GET", "/api/v1/me/ssh-keys", api::kUser, [&ctx, &keys](http::Request& req) {
    auto p = api::RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto list = keys.List(p->user.id);
    if (!list.ok()) return http::ErrorResponse(list.status());
    json::array items;
    for (const SshKey& k : *list) items.push_back(KeyJson(k));
    return http::Response::Json(
        200, json::object{{"items", std::move(items)}, {"next_cursor", nullptr}});
  });

  r.Add("POST", "/api/v1/me/ssh-keys", api::kUser, [&ctx, &keys](http::Request& req) {
    auto p = api::RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    auto body = api::JsonObjectBody(req);
    if (!body.ok()) return http::ErrorResponse(body.status());
    FieldErrors errors;
    JsonReader in(*body, "", &errors);
    in.RejectUnknown({"name", "public_key"});
    std::optional<std::string> name = in.String("name", false, 4 * kMaxNameChars);
    std::optional<std::string> key = in.String("public_key", true, kMaxPublicKeyChars, true);
    if (!errors.empty()) return http::ErrorResponse(ValidationFailed(std::move(errors)));
    auto added = keys.Add(p->user.id, name.value_or(""), *key);
    if (!added.ok()) return http::ErrorResponse(added.status());
    return http::Response::Json(201, KeyJson(*added));
  });

  r.Add("DELETE", "/api/v1/me/ssh-keys/{id}", api::kUser, [&ctx, &keys](http::Request& req) {
    auto p = api::RequireUser(req, ctx);
    if (!p.ok()) return http::ErrorResponse(p.status());
    Status st = keys.Remove(p->user.id, req.Param("id"));
    if (!st.ok()) return http::ErrorResponse(st);
    return http::Response::NoContent();
  });
}

}  // namespace gpunex::platform::sshkeys
