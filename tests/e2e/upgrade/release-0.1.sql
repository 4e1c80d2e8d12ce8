BEGIN TRANSACTION;
CREATE TABLE agent_commands (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                kind TEXT NOT NULL,
                payload TEXT NOT NULL,
                state TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                sent_at BIGINT,
                acked_at BIGINT,
                done_at BIGINT,
                ok BIGINT,
                result TEXT);
INSERT INTO "agent_commands" VALUES('cmd_01M8RDZQ41ETA0DK12TEKT72XD','mch_01M8RDZQ3RF67J2JA9CPCVX0PB','run_benchmark','{"benchmark_id":"bmk_01M8RDZQ41ETA0DK12TEKT72XC","gpus":[{"uuid":"GPU-emu-fixture-aaaa-0000-0000-000000000000","catalog_id":"l4-24gb"},{"uuid":"GPU-emu-fixture-aaaa-0000-0000-000000000001","catalog_id":"l4-24gb"}],"machine_phases":true,"sustain_s":0,"storage":{"file_mb":8,"seconds_per_phase":1},"network":{"mb":4,"pings":3}}','done',1796116307073253,1796116307081151,1796116307116416,1796116307141165,1,'{"error":"","data":{"benchmark_id":"bmk_01M8RDZQ41ETA0DK12TEKT72XC","emulated":true,"gpus":[{"uuid":"GPU-emu-fixture-aaaa-0000-0000-000000000000","ok":true,"result":{"tool":"gpunex-gpubench","version":"1","emulated":true,"device":{"pcie_gen":4,"pcie_width":16},"compute":{"fp32_tflops":27.27,"fp16_tflops":27.27,"fp16_tensor_tflops":108.9,"bf16_tensor_tflops":108.9,"tf32_tensor_tflops":54},"memory":{"read_gbps":270,"write_gbps":270,"copy_gbps":270,"triad_gbps":270},"sustained":{"seconds":60,"mean_tflops":100,"min_over_median":0.98,"cv":0.01,"thermal_throttle_fraction":0,"power_throttle_fraction":0,"max_temperature_c":70,"mean_power_w":70},"sanity":{"ok":true,"failures":[]}}},{"uuid":"GPU-emu-fixture-aaaa-0000-0000-000000000001","ok":true,"result":{"tool":"gpunex-gpubench","version":"1","emulated":true,"device":{"pcie_gen":4,"pcie_width":16},"compute":{"fp32_tflops":27.27,"fp16_tflops":27.27,"fp16_tensor_tflops":108.9,"bf16_tensor_tflops":108.9,"tf32_tensor_tflops":54},"memory":{"read_gbps":270,"write_gbps":270,"copy_gbps":270,"triad_gbps":270},"sustained":{"seconds":60,"mean_tflops":100,"min_over_median":0.98,"cv":0.01,"thermal_throttle_fraction":0,"power_throttle_fraction":0,"max_temperature_c":70,"mean_power_w":70},"sanity":{"ok":true,"failures":[]}}}],"network":{"rtt_p50_ms":1,"rtt_p99_ms":3,"download_mbit_s":900,"upload_mbit_s":800},"storage":{"seq_read_mb_s":1500,"seq_write_mb_s":1200,"rand_read_iops":90000,"rand_read_p50_us":90,"rand_read_p99_us":400,"direct_io":true}}}');
INSERT INTO "agent_commands" VALUES('cmd_01M8RDZQ7E7DAJZPP3YAP70PFV','mch_01M8RDZQ4F1QYZGNY3CDF12381','run_benchmark','{"benchmark_id":"bmk_01M8RDZQ7E7DAJZPP3YAP70PFT","gpus":[{"uuid":"GPU-emu-fixture-bbbb-0000-0000-000000000000","catalog_id":"h100-sxm-80gb"},{"uuid":"GPU-emu-fixture-bbbb-0000-0000-000000000001","catalog_id":"h100-sxm-80gb"}],"machine_phases":true,"sustain_s":0,"storage":{"file_mb":8,"seconds_per_phase":1},"network":{"mb":4,"pings":3}}','done',1796116307182052,1796116307185259,1796116307197352,1796116307201030,1,'{"error":"","data":{"benchmark_id":"bmk_01M8RDZQ7E7DAJZPP3YAP70PFT","emulated":true,"gpus":[{"uuid":"GPU-emu-fixture-bbbb-0000-0000-000000000000","ok":true,"result":{"tool":"gpunex-gpubench","version":"1","emulated":true,"device":{"pcie_gen":4,"pcie_width":16},"compute":{"fp32_tflops":61.54800000000001,"fp16_tflops":123.09600000000002,"fp16_tensor_tflops":910.248,"bf16_tensor_tflops":910.248,"tf32_tensor_tflops":455.124},"memory":{"read_gbps":3082,"write_gbps":3082,"copy_gbps":3082,"triad_gbps":3082},"sustained":{"seconds":60,"mean_tflops":100,"min_over_median":0.98,"cv":0.01,"thermal_throttle_fraction":0,"power_throttle_fraction":0,"max_temperature_c":70,"mean_power_w":70},"sanity":{"ok":true,"failures":[]}}},{"uuid":"GPU-emu-fixture-bbbb-0000-0000-000000000001","ok":true,"result":{"tool":"gpunex-gpubench","version":"1","emulated":true,"device":{"pcie_gen":4,"pcie_width":16},"compute":{"fp32_tflops":61.54800000000001,"fp16_tflops":123.09600000000002,"fp16_tensor_tflops":910.248,"bf16_tensor_tflops":910.248,"tf32_tensor_tflops":455.124},"memory":{"read_gbps":3082,"write_gbps":3082,"copy_gbps":3082,"triad_gbps":3082},"sustained":{"seconds":60,"mean_tflops":100,"min_over_median":0.98,"cv":0.01,"thermal_throttle_fraction":0,"power_throttle_fraction":0,"max_temperature_c":70,"mean_power_w":70},"sanity":{"ok":true,"failures":[]}}}],"network":{"rtt_p50_ms":1,"rtt_p99_ms":3,"download_mbit_s":900,"upload_mbit_s":800},"storage":{"seq_read_mb_s":1500,"seq_write_mb_s":1200,"rand_read_iops":90000,"rand_read_p50_us":90,"rand_read_p99_us":400,"direct_io":true}}}');
INSERT INTO "agent_commands" VALUES('cmd_01M8RDZQ7H85P9SA04A9M0FK1Z','mch_01M8RDZQ4P29KAG3TSHFQ1TYHR','run_benchmark','{"benchmark_id":"bmk_01M8RDZQ7H85P9SA04A9M0FK1Y","gpus":[{"uuid":"GPU-emu-fixture-cccc-0000-0000-000000000000","catalog_id":"a100-sxm-80gb"}],"machine_phases":true,"sustain_s":0,"storage":{"file_mb":8,"seconds_per_phase":1},"network":{"mb":4,"pings":3}}','done',1796116307185871,1796116307190309,1796116307191952,1796116307192428,0,'{"error":"docker engine unreachable: /var/run/docker.sock","data":{"benchmark_id":"bmk_01M8RDZQ7H85P9SA04A9M0FK1Y","emulated":true,"gpus":[{"uuid":"GPU-emu-fixture-cccc-0000-0000-000000000000","ok":false,"error":"no GPU"}],"network":{"rtt_p50_ms":1,"rtt_p99_ms":3,"download_mbit_s":900,"upload_mbit_s":800},"storage":{"seq_read_mb_s":1500,"seq_write_mb_s":1200,"rand_read_iops":90000,"rand_read_p50_us":90,"rand_read_p99_us":400,"direct_io":true}}}');
INSERT INTO "agent_commands" VALUES('cmd_01M8RDZQB3BN8RH8FE9JR2TYD4','mch_01M8RDZQ3RF67J2JA9CPCVX0PB','start_workload','{"workload_id":"wl_01M8RDZQB2708SAWHH6EEB72A7","image":"gpunex-test/busybox:1","command":["sh","-c","echo hello from the fixture; echo careful >&2; exit 3"],"env":{"FIXTURE":"release-0.1"},"gpu_uuids":["GPU-emu-fixture-aaaa-0000-0000-000000000000"],"memory_mb":2048,"cpus":2,"pids_limit":1024,"scratch_mb":4096,"timeout_s":0}','done',1796116307299027,1796116307299767,1796116307302751,1796116307305035,1,'{"error":"","data":{"workload_id":"wl_01M8RDZQB2708SAWHH6EEB72A7"}}');
INSERT INTO "agent_commands" VALUES('cmd_01M8RDZQHK1YTQTYPADWSPNZ14','mch_01M8RDZQ3RF67J2JA9CPCVX0PB','start_workload','{"workload_id":"wl_01M8RDZQHK1YTQTYPADWSPNZ13","image":"gpunex-test/cuda:12","command":["python3","train.py","--epochs","3"],"env":{},"gpu_uuids":["GPU-emu-fixture-aaaa-0000-0000-000000000001"],"memory_mb":4096,"cpus":2,"pids_limit":1024,"scratch_mb":4096,"timeout_s":0}','done',1796116307507563,1796116307508073,1796116307508729,1796116307510034,1,'{"error":"","data":{"workload_id":"wl_01M8RDZQHK1YTQTYPADWSPNZ13"}}');
INSERT INTO "agent_commands" VALUES('cmd_01M8RDZQR40VWSDW9EH2QF4Y82','mch_01M8RDZQ4F1QYZGNY3CDF12381','start_workload','{"workload_id":"wl_01M8RDZQR40VWSDW9EH2QF4Y81","image":"gpunex-test/missing:0","command":["true"],"env":{},"gpu_uuids":["GPU-emu-fixture-bbbb-0000-0000-000000000000","GPU-emu-fixture-bbbb-0000-0000-000000000001"],"memory_mb":8192,"cpus":4,"pids_limit":1024,"scratch_mb":4096,"timeout_s":0}','done',1796116307716920,1796116307717700,1796116307718377,1796116307719252,0,'{"error":"image pull failed: gpunex-test/missing:0 not found","data":{}}');
INSERT INTO "agent_commands" VALUES('cmd_01M8RDZQVC6RCJEREDE8BGQ1B5','mch_01M8RDZQ3RF67J2JA9CPCVX0PB','run_benchmark','{"benchmark_id":"bmk_01M8RDZQVC6RCJEREDE8BGQ1B4","gpus":[{"uuid":"GPU-emu-fixture-aaaa-0000-0000-000000000000","catalog_id":"l4-24gb"},{"uuid":"GPU-emu-fixture-aaaa-0000-0000-000000000001","catalog_id":"l4-24gb"}],"machine_phases":true,"sustain_s":0,"storage":{"file_mb":8,"seconds_per_phase":1},"network":{"mb":4,"pings":3}}','done',1796116307820710,1796116307825187,1796116307830076,1796116307830876,1,'{"error":"","data":{"benchmark_id":"bmk_01M8RDZQVC6RCJEREDE8BGQ1B4","emulated":true,"gpus":[{"uuid":"GPU-emu-fixture-aaaa-0000-0000-000000000000","ok":true,"result":{"tool":"gpunex-gpubench","version":"1","emulated":true,"device":{"pcie_gen":4,"pcie_width":16},"compute":{"fp32_tflops":28.785,"fp16_tflops":28.785,"fp16_tensor_tflops":114.95,"bf16_tensor_tflops":114.95,"tf32_tensor_tflops":57},"memory":{"read_gbps":285,"write_gbps":285,"copy_gbps":285,"triad_gbps":285},"sustained":{"seconds":60,"mean_tflops":100,"min_over_median":0.98,"cv":0.01,"thermal_throttle_fraction":0,"power_throttle_fraction":0,"max_temperature_c":70,"mean_power_w":70},"sanity":{"ok":true,"failures":[]}}},{"uuid":"GPU-emu-fixture-aaaa-0000-0000-000000000001","ok":true,"result":{"tool":"gpunex-gpubench","version":"1","emulated":true,"device":{"pcie_gen":4,"pcie_width":16},"compute":{"fp32_tflops":27.27,"fp16_tflops":27.27,"fp16_tensor_tflops":108.9,"bf16_tensor_tflops":108.9,"tf32_tensor_tflops":54},"memory":{"read_gbps":150,"write_gbps":150,"copy_gbps":150,"triad_gbps":150},"sustained":{"seconds":60,"mean_tflops":100,"min_over_median":0.98,"cv":0.01,"thermal_throttle_fraction":0.6,"power_throttle_fraction":0,"max_temperature_c":70,"mean_power_w":70},"sanity":{"ok":true,"failures":[]}}}],"network":{"rtt_p50_ms":1,"rtt_p99_ms":3,"download_mbit_s":900,"upload_mbit_s":800},"storage":{"seq_read_mb_s":1500,"seq_write_mb_s":1200,"rand_read_iops":90000,"rand_read_p50_us":90,"rand_read_p99_us":400,"direct_io":true}}}');
CREATE TABLE agent_tokens (
                id TEXT PRIMARY KEY,
                provider_id TEXT NOT NULL REFERENCES providers(user_id),
                name TEXT NOT NULL,
                token_hash TEXT NOT NULL UNIQUE,
                token_prefix TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                last_used_at BIGINT,
                revoked_at BIGINT,
                replaced_by TEXT);
INSERT INTO "agent_tokens" VALUES('atk_01M8RDZQ1A7JHZ2Y42YJSBPEFR','usr_01M8RDZPYE7D8A871G0VY86Y67','first agent','bb72bceddeb20f49bdbabf120b1c99f827263eec081f9498e21d84071d0e639c','gpx_a_UTVfrH',1796116306986990,1796116307064030,NULL,NULL);
INSERT INTO "agent_tokens" VALUES('atk_01M8RDZQ1S92NRVF2YXPB6T44F','usr_01M8RDZPYNESNR6E1HVMBX7VBB','first agent','8f56f55281ea82d2a647e97027d40ecc2ec07413e06dda18a8690a0a3db5c013','gpx_a_FAGLLQ',1796116307001641,1796116311896086,NULL,NULL);
INSERT INTO "agent_tokens" VALUES('atk_01M8RDZQ3E2RPHEAM7QYY28TX1','usr_01M8RDZPYE7D8A871G0VY86Y67','rack 2','9541ba1a4f5822f4ffdbeea8e9ddc3f42fa787fde7b9eb7edd7bbff400f8d263','gpx_a_rB6rbN',1796116307054226,1796116307092710,1796116311908261,'atk_01M8RDZVV43AYXPC6E8X8VSE73');
INSERT INTO "agent_tokens" VALUES('atk_01M8RDZQ3J7ZHHYKZG5GSCDHXM','usr_01M8RDZPYNESNR6E1HVMBX7VBB','spare','6c454d99e4d3e9c98e3dde35957b99afef5fdbb775e03e94e1907d3950458b5a','gpx_a_PjKr1c',1796116307058013,NULL,1796116307059589,NULL);
INSERT INTO "agent_tokens" VALUES('atk_01M8RDZVV43AYXPC6E8X8VSE73','usr_01M8RDZPYE7D8A871G0VY86Y67','rack 2','e6668e9b65ecfae8659b4a42ee1145e47c149e3211369fa9f37ad5c71b9abe29','gpx_a_aCvVfA',1796116311908219,1796116311959286,NULL,NULL);
CREATE TABLE api_keys (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                name TEXT NOT NULL,
                token_hash TEXT NOT NULL UNIQUE,
                token_prefix TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                last_used_at BIGINT,
                revoked_at BIGINT);
INSERT INTO "api_keys" VALUES('key_01M8RDZQ0S9ECM0PKYVGFKDYGH','usr_01M8RDZQ09FVV7XVMD15PGNVAG','ci pipeline','36b8f955aaa88ace37e90593a51a53e2a61ee36914334b4b1e2da13f9651f144','gpx_k_pwIvHo',1796116306969578,NULL,NULL);
INSERT INTO "api_keys" VALUES('key_01M8RDZQ0V44QAZX2Z3R8DDBD3','usr_01M8RDZQ09FVV7XVMD15PGNVAG','old laptop','d76615f406d3247f24368e6ee180d8728d3ca18098c8bd99f1d3496c72faa5ad','gpx_k_3_pePI',1796116306971725,NULL,1796116306977549);
INSERT INTO "api_keys" VALUES('key_01M8RDZQ0X2GDM1CYM59BWFFDV','usr_01M8RDZPY03EZY3YT1H1RTJNCG','admin cli','7049f1e5a2dbcb037b7ce7d47665bb7c6e4e3dc026848dd42fec8545a345a772','gpx_k_KsY3Am',1796116306973495,NULL,NULL);
INSERT INTO "api_keys" VALUES('key_01M8RDZQ0YB4AE0B8F7PMT3FR9','usr_01M8RDZPYE7D8A871G0VY86Y67','pia automation','4719f66f62227b6c40cf1bce49ffa58cbedc20481ce038bdfbfec6e0bb61574c','gpx_k_WR1UDx',1796116306974472,NULL,NULL);
CREATE TABLE application_events (
                id TEXT PRIMARY KEY,
                application_id TEXT NOT NULL REFERENCES provider_applications(id),
                at BIGINT NOT NULL,
                actor_user_id TEXT NOT NULL,
                action TEXT NOT NULL,
                from_status TEXT NOT NULL,
                to_status TEXT NOT NULL,
                message TEXT,
                tier TEXT);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ181Q6SX97TQCQ4P5JX','app_01M8RDZQ181Q6SX97TQCQ4P5JW',1796116306984101,'usr_01M8RDZPYE7D8A871G0VY86Y67','created','','draft',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ181Q6SX97TQCQ4P5JY','app_01M8RDZQ181Q6SX97TQCQ4P5JW',1796116306984101,'usr_01M8RDZPYE7D8A871G0VY86Y67','submitted','draft','submitted',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ1A7JHZ2Y42YJSBPEFN','app_01M8RDZQ181Q6SX97TQCQ4P5JW',1796116306986846,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','approve','submitted','approved',NULL,'community');
INSERT INTO "application_events" VALUES('ape_01M8RDZQ1E4CHAR60SPD971H98','app_01M8RDZQ1E4CHAR60SPD971H97',1796116306990318,'usr_01M8RDZPYNESNR6E1HVMBX7VBB','created','','draft',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ1H7DEZ4JVSZD4W2JB1','app_01M8RDZQ1E4CHAR60SPD971H97',1796116306993697,'usr_01M8RDZPYNESNR6E1HVMBX7VBB','updated','draft','draft',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ1N690P7TD9K2D6KVQE','app_01M8RDZQ1E4CHAR60SPD971H97',1796116306997585,'usr_01M8RDZPYNESNR6E1HVMBX7VBB','submitted','draft','submitted',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ1S92NRVF2YXPB6T44C','app_01M8RDZQ1E4CHAR60SPD971H97',1796116307001542,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','approve','submitted','approved','Welcome aboard: listed as Enterprise.','enterprise');
INSERT INTO "application_events" VALUES('ape_01M8RDZQ1T8NXREZBNF1ATKB27','app_01M8RDZQ1T8NXREZBNF1ATKB26',1796116307002905,'usr_01M8RDZPYX7YSP8RA4MHHBNK9P','created','','draft',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ1T8NXREZBNF1ATKB28','app_01M8RDZQ1T8NXREZBNF1ATKB26',1796116307002905,'usr_01M8RDZPYX7YSP8RA4MHHBNK9P','submitted','draft','submitted',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ1X55N960VKPDQZMDBP','app_01M8RDZQ1T8NXREZBNF1ATKB26',1796116307005637,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','reject','submitted','rejected','Residential connection below 1 Gbps: not suitable at this time.',NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ21B9Q1R597WT002SRZ','app_01M8RDZQ21B9Q1R597WT002SRY',1796116307009650,'usr_01M8RDZPZ93130SS1X9P0ZFZAS','created','','draft',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ21B9Q1R597WT002SS0','app_01M8RDZQ21B9Q1R597WT002SRY',1796116307009650,'usr_01M8RDZPZ93130SS1X9P0ZFZAS','submitted','draft','submitted',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ25CHW2Q2YQSE7E3FR5','app_01M8RDZQ21B9Q1R597WT002SRY',1796116307013595,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','request_info','submitted','needs_info','Which UPS model, and how long does it hold the rack?',NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ26ED4JQZ1NRDWM6PKV','app_01M8RDZQ21B9Q1R597WT002SRY',1796116307014886,'usr_01M8RDZPZ93130SS1X9P0ZFZAS','updated','needs_info','needs_info',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ29DJX2KF1CCH0Z6T6G','app_01M8RDZQ21B9Q1R597WT002SRY',1796116307017598,'usr_01M8RDZPZ93130SS1X9P0ZFZAS','resubmitted','needs_info','submitted',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ2DF30C81HAA2YF6B8F','app_01M8RDZQ2DF30C81HAA2YF6B8E',1796116307021658,'usr_01M8RDZPZE0K9T5VNMHG4YT74W','created','','draft',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ2DF30C81HAA2YF6B8G','app_01M8RDZQ2DF30C81HAA2YF6B8E',1796116307021658,'usr_01M8RDZPZE0K9T5VNMHG4YT74W','submitted','draft','submitted',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ2H52K8HYRKXFSMYXFB','app_01M8RDZQ2H52K8HYRKXFSMYXFA',1796116307025603,'usr_01M8RDZPZNES2M2BE619HYP7PF','created','','draft',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ2J9H3H8D7VRBVWAG5S','app_01M8RDZQ2H52K8HYRKXFSMYXFA',1796116307026730,'usr_01M8RDZPZNES2M2BE619HYP7PF','updated','draft','draft',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ2NDYHPNV5W0BFD3BHQ','app_01M8RDZQ2NDYHPNV5W0BFD3BHP',1796116307029689,'usr_01M8RDZPZ20B4B0BW913S4EYTB','created','','draft',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RDZQ2NDYHPNV5W0BFD3BHR','app_01M8RDZQ2NDYHPNV5W0BFD3BHP',1796116307029689,'usr_01M8RDZPZ20B4B0BW913S4EYTB','submitted','draft','submitted',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RE00A35WPGXD6Y6Y44ET61','app_01M8RDZQ2NDYHPNV5W0BFD3BHP',1796116316483164,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','request_info','submitted','needs_info','Please send a photo of the rack and the ISP contract.',NULL);
INSERT INTO "application_events" VALUES('ape_01M8RE00A929F0Q34HWSMZ79DH','app_01M8RE00A929F0Q34HWSMZ79DG',1796116316489139,'usr_01M8RDZPZT01WG32PZ4CC5QAB0','created','','draft',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RE00AC9043KK1A4419962J','app_01M8RE00AC9043KK1A4419962H',1796116316492116,'usr_01M8RDZQ01EKDXT1JZBHKZTV2T','created','','draft',NULL,NULL);
INSERT INTO "application_events" VALUES('ape_01M8RE00AEA4030MEK2578741E','app_01M8RE00AEA4030MEK2578741D',1796116316494706,'usr_01M8RDZQ063SCMRVDWDGR09EEW','created','','draft',NULL,NULL);
CREATE TABLE audit_events (
                id TEXT PRIMARY KEY,
                at BIGINT NOT NULL,
                actor_user_id TEXT,
                action TEXT NOT NULL,
                subject TEXT NOT NULL DEFAULT '',
                ip TEXT NOT NULL DEFAULT '',
                detail TEXT NOT NULL DEFAULT '{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPY03EZY3YT1H1RTJNCH',1796116306880497,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','role.granted','usr_01M8RDZPY03EZY3YT1H1RTJNCG','','{"role":"customer"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPY03EZY3YT1H1RTJNCJ',1796116306880526,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','role.granted','usr_01M8RDZPY03EZY3YT1H1RTJNCG','','{"role":"admin"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPY03EZY3YT1H1RTJNCK',1796116306880534,NULL,'admin.created','usr_01M8RDZPY03EZY3YT1H1RTJNCG','cli','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPYC0M699YAAMCJRJTA8',1796116306892195,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','login.succeeded','ses_01M8RDZPYC0M699YAAMCJRJTA7','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPYE7D8A871G0VY86Y68',1796116306894351,'usr_01M8RDZPYE7D8A871G0VY86Y67','role.granted','usr_01M8RDZPYE7D8A871G0VY86Y67','','{"role":"customer"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPYE7D8A871G0VY86Y69',1796116306894367,'usr_01M8RDZPYE7D8A871G0VY86Y67','user.signup','usr_01M8RDZPYE7D8A871G0VY86Y67','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPYG80TEZH3MYXBZ008B',1796116306896313,'usr_01M8RDZPYE7D8A871G0VY86Y67','login.succeeded','ses_01M8RDZPYG80TEZH3MYXBZ008A','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPYNESNR6E1HVMBX7VBC',1796116306901565,'usr_01M8RDZPYNESNR6E1HVMBX7VBB','role.granted','usr_01M8RDZPYNESNR6E1HVMBX7VBB','','{"role":"customer"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPYNESNR6E1HVMBX7VBD',1796116306901579,'usr_01M8RDZPYNESNR6E1HVMBX7VBB','user.signup','usr_01M8RDZPYNESNR6E1HVMBX7VBB','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPYS14QSZ88MJ7ZYD54A',1796116306905734,'usr_01M8RDZPYNESNR6E1HVMBX7VBB','login.succeeded','ses_01M8RDZPYS14QSZ88MJ7ZYD549','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPYX7YSP8RA4MHHBNK9Q',1796116306909687,'usr_01M8RDZPYX7YSP8RA4MHHBNK9P','role.granted','usr_01M8RDZPYX7YSP8RA4MHHBNK9P','','{"role":"customer"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPYX7YSP8RA4MHHBNK9R',1796116306909701,'usr_01M8RDZPYX7YSP8RA4MHHBNK9P','user.signup','usr_01M8RDZPYX7YSP8RA4MHHBNK9P','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZ16RVYN5TMV3XHV0DB',1796116306913694,'usr_01M8RDZPYX7YSP8RA4MHHBNK9P','login.succeeded','ses_01M8RDZPZ16RVYN5TMV3XHV0DA','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZ20B4B0BW913S4EYTC',1796116306914774,'usr_01M8RDZPZ20B4B0BW913S4EYTB','role.granted','usr_01M8RDZPZ20B4B0BW913S4EYTB','','{"role":"customer"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZ20B4B0BW913S4EYTD',1796116306914786,'usr_01M8RDZPZ20B4B0BW913S4EYTB','user.signup','usr_01M8RDZPZ20B4B0BW913S4EYTB','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZ5EACW58M7J5X9Z7TP',1796116306917638,'usr_01M8RDZPZ20B4B0BW913S4EYTB','login.succeeded','ses_01M8RDZPZ5EACW58M7J5X9Z7TN','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZ93130SS1X9P0ZFZAT',1796116306921586,'usr_01M8RDZPZ93130SS1X9P0ZFZAS','role.granted','usr_01M8RDZPZ93130SS1X9P0ZFZAS','','{"role":"customer"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZ93130SS1X9P0ZFZAV',1796116306921600,'usr_01M8RDZPZ93130SS1X9P0ZFZAS','user.signup','usr_01M8RDZPZ93130SS1X9P0ZFZAS','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZDF5H9H0SWWQ4JBEBC',1796116306925629,'usr_01M8RDZPZ93130SS1X9P0ZFZAS','login.succeeded','ses_01M8RDZPZDF5H9H0SWWQ4JBEBB','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZE0K9T5VNMHG4YT74X',1796116306926675,'usr_01M8RDZPZE0K9T5VNMHG4YT74W','role.granted','usr_01M8RDZPZE0K9T5VNMHG4YT74W','','{"role":"customer"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZE0K9T5VNMHG4YT74Y',1796116306926687,'usr_01M8RDZPZE0K9T5VNMHG4YT74W','user.signup','usr_01M8RDZPZE0K9T5VNMHG4YT74W','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZH47AJ64DFRHBVAEM3',1796116306929641,'usr_01M8RDZPZE0K9T5VNMHG4YT74W','login.succeeded','ses_01M8RDZPZH47AJ64DFRHBVAEM2','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZNES2M2BE619HYP7PG',1796116306933623,'usr_01M8RDZPZNES2M2BE619HYP7PF','role.granted','usr_01M8RDZPZNES2M2BE619HYP7PF','','{"role":"customer"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZNES2M2BE619HYP7PH',1796116306933634,'usr_01M8RDZPZNES2M2BE619HYP7PF','user.signup','usr_01M8RDZPZNES2M2BE619HYP7PF','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZS1BD4Y766Q1RTJT1R',1796116306937597,'usr_01M8RDZPZNES2M2BE619HYP7PF','login.succeeded','ses_01M8RDZPZS1BD4Y766Q1RTJT1Q','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZT01WG32PZ4CC5QAB1',1796116306938603,'usr_01M8RDZPZT01WG32PZ4CC5QAB0','role.granted','usr_01M8RDZPZT01WG32PZ4CC5QAB0','','{"role":"customer"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZT01WG32PZ4CC5QAB2',1796116306938615,'usr_01M8RDZPZT01WG32PZ4CC5QAB0','user.signup','usr_01M8RDZPZT01WG32PZ4CC5QAB0','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZPZX5ZXJ61HHYD6BVQKX',1796116306941648,'usr_01M8RDZPZT01WG32PZ4CC5QAB0','login.succeeded','ses_01M8RDZPZX5ZXJ61HHYD6BVQKW','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ01EKDXT1JZBHKZTV2V',1796116306945601,'usr_01M8RDZQ01EKDXT1JZBHKZTV2T','role.granted','usr_01M8RDZQ01EKDXT1JZBHKZTV2T','','{"role":"customer"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ01EKDXT1JZBHKZTV2W',1796116306945612,'usr_01M8RDZQ01EKDXT1JZBHKZTV2T','user.signup','usr_01M8RDZQ01EKDXT1JZBHKZTV2T','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ05CVXPE92JWKMKYZJ1',1796116306949588,'usr_01M8RDZQ01EKDXT1JZBHKZTV2T','login.succeeded','ses_01M8RDZQ05CVXPE92JWKMKYZJ0','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ063SCMRVDWDGR09EEX',1796116306950631,'usr_01M8RDZQ063SCMRVDWDGR09EEW','role.granted','usr_01M8RDZQ063SCMRVDWDGR09EEW','','{"role":"customer"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ063SCMRVDWDGR09EEY',1796116306950644,'usr_01M8RDZQ063SCMRVDWDGR09EEW','user.signup','usr_01M8RDZQ063SCMRVDWDGR09EEW','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ07ECMP5P8ZR9662T6Z',1796116306951648,'usr_01M8RDZQ063SCMRVDWDGR09EEW','login.succeeded','ses_01M8RDZQ07ECMP5P8ZR9662T6Y','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ09FVV7XVMD15PGNVAH',1796116306953595,'usr_01M8RDZQ09FVV7XVMD15PGNVAG','role.granted','usr_01M8RDZQ09FVV7XVMD15PGNVAG','','{"role":"customer"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ09FVV7XVMD15PGNVAJ',1796116306953607,'usr_01M8RDZQ09FVV7XVMD15PGNVAG','user.signup','usr_01M8RDZQ09FVV7XVMD15PGNVAG','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ0D5DS9R2HRGHD4918N',1796116306957601,'usr_01M8RDZQ09FVV7XVMD15PGNVAG','login.succeeded','ses_01M8RDZQ0D5DS9R2HRGHD4918M','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ0E3Y0254R0DXKR3EHM',1796116306958639,'usr_01M8RDZQ09FVV7XVMD15PGNVAG','login.succeeded','ses_01M8RDZQ0E3Y0254R0DXKR3EHK','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ0FB69MX0V39NAJ7DDB',1796116306959664,'usr_01M8RDZQ09FVV7XVMD15PGNVAG','logout','ses_01M8RDZQ0E3Y0254R0DXKR3EHK','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ0H0KTNCCHKDHGYX1WV',1796116306961561,'usr_01M8RDZQ09FVV7XVMD15PGNVAG','login.failed','carl@example.com','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ0N8F3VDEXXJDQ0CCJB',1796116306965709,'usr_01M8RDZQ09FVV7XVMD15PGNVAG','login.failed','carl@example.com','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ0PBKDKGDQR902K9JTV',1796116306966724,NULL,'login.failed','mallory@example.com','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ0QBKTQ94XTPE0Z70QR',1796116306967742,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','login.failed','admin@gpunex.test','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ0S9ECM0PKYVGFKDYGJ',1796116306969633,'usr_01M8RDZQ09FVV7XVMD15PGNVAG','api_key.created','key_01M8RDZQ0S9ECM0PKYVGFKDYGH','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ0V44QAZX2Z3R8DDBD4',1796116306971773,'usr_01M8RDZQ09FVV7XVMD15PGNVAG','api_key.created','key_01M8RDZQ0V44QAZX2Z3R8DDBD3','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ0X2GDM1CYM59BWFFDW',1796116306973525,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','api_key.created','key_01M8RDZQ0X2GDM1CYM59BWFFDV','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ0YB4AE0B8F7PMT3FRA',1796116306974504,'usr_01M8RDZPYE7D8A871G0VY86Y67','api_key.created','key_01M8RDZQ0YB4AE0B8F7PMT3FR9','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ1167BCPJ42XA4SHHD5',1796116306977565,'usr_01M8RDZQ09FVV7XVMD15PGNVAG','api_key.revoked','key_01M8RDZQ0V44QAZX2Z3R8DDBD3','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ1A7JHZ2Y42YJSBPEFP',1796116306986902,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','application.approve','app_01M8RDZQ181Q6SX97TQCQ4P5JW','127.0.0.1','{"tier":"community"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ1A7JHZ2Y42YJSBPEFQ',1796116306986960,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','role.granted','usr_01M8RDZPYE7D8A871G0VY86Y67','','{"role":"provider"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ1BE45R7FNZYA41061G',1796116306987008,'usr_01M8RDZPYE7D8A871G0VY86Y67','agent_token.created','atk_01M8RDZQ1A7JHZ2Y42YJSBPEFR','','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ1S92NRVF2YXPB6T44D',1796116307001578,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','application.approve','app_01M8RDZQ1E4CHAR60SPD971H97','127.0.0.1','{"tier":"enterprise"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ1S92NRVF2YXPB6T44E',1796116307001618,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','role.granted','usr_01M8RDZPYNESNR6E1HVMBX7VBB','','{"role":"provider"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ1S92NRVF2YXPB6T44G',1796116307001652,'usr_01M8RDZPYNESNR6E1HVMBX7VBB','agent_token.created','atk_01M8RDZQ1S92NRVF2YXPB6T44F','','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ1X55N960VKPDQZMDBQ',1796116307005673,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','application.reject','app_01M8RDZQ1T8NXREZBNF1ATKB26','127.0.0.1','{"tier":null}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ25CHW2Q2YQSE7E3FR6',1796116307013632,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','application.request_info','app_01M8RDZQ21B9Q1R597WT002SRY','127.0.0.1','{"tier":null}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ3E2RPHEAM7QYY28TX2',1796116307054252,'usr_01M8RDZPYE7D8A871G0VY86Y67','agent_token.created','atk_01M8RDZQ3E2RPHEAM7QYY28TX1','','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ3J7ZHHYKZG5GSCDHXN',1796116307058032,'usr_01M8RDZPYNESNR6E1HVMBX7VBB','agent_token.created','atk_01M8RDZQ3J7ZHHYKZG5GSCDHXM','','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ3K6SJJ2YKV69FPT731',1796116307059605,'usr_01M8RDZPYNESNR6E1HVMBX7VBB','agent_token.revoked','atk_01M8RDZQ3J7ZHHYKZG5GSCDHXM','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQ3N81A72VHSZWNV3ER8',1796116307061571,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','gpu_model.added','rtx5090-32gb','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQB3BN8RH8FE9JR2TYD5',1796116307299043,'usr_01M8RDZPYE7D8A871G0VY86Y67','workload.created','wl_01M8RDZQB2708SAWHH6EEB72A7','127.0.0.1','{"machine_id":"mch_01M8RDZQ3RF67J2JA9CPCVX0PB"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQHK1YTQTYPADWSPNZ15',1796116307507580,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','workload.created','wl_01M8RDZQHK1YTQTYPADWSPNZ13','127.0.0.1','{"machine_id":"mch_01M8RDZQ3RF67J2JA9CPCVX0PB"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQR56MCNFGV0V46B0GH4',1796116307717039,'usr_01M8RDZPYNESNR6E1HVMBX7VBB','workload.created','wl_01M8RDZQR40VWSDW9EH2QF4Y81','127.0.0.1','{"machine_id":"mch_01M8RDZQ4F1QYZGNY3CDF12381"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQVC6RCJEREDE8BGQ1B6',1796116307820806,'usr_01M8RDZPYE7D8A871G0VY86Y67','benchmark.requested','bmk_01M8RDZQVC6RCJEREDE8BGQ1B4','127.0.0.1','{"machine_id":"mch_01M8RDZQ3RF67J2JA9CPCVX0PB"}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZQYX825NZV0ZGAB6Q42V',1796116307933378,'usr_01M8RDZPYNESNR6E1HVMBX7VBB','gpu.disabled','gpu_01M8RDZQ4F1QYZGNY3CDF12385','127.0.0.1','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZVV43AYXPC6E8X8VSE74',1796116311908242,'usr_01M8RDZPYE7D8A871G0VY86Y67','agent_token.created','atk_01M8RDZVV43AYXPC6E8X8VSE73','','{}');
INSERT INTO "audit_events" VALUES('aud_01M8RDZVV43AYXPC6E8X8VSE75',1796116311908272,'usr_01M8RDZPYE7D8A871G0VY86Y67','agent_token.rotated','atk_01M8RDZQ3E2RPHEAM7QYY28TX1','127.0.0.1','{"replaced_by":"atk_01M8RDZVV43AYXPC6E8X8VSE73"}');
INSERT INTO "audit_events" VALUES('aud_01M8RE00A35WPGXD6Y6Y44ET62',1796116316483215,'usr_01M8RDZPY03EZY3YT1H1RTJNCG','application.request_info','app_01M8RDZQ2NDYHPNV5W0BFD3BHP','127.0.0.1','{"tier":null}');
CREATE TABLE benchmark_gpus (
                run_id TEXT NOT NULL REFERENCES benchmark_runs(id),
                gpu_id TEXT NOT NULL REFERENCES machine_gpus(id),
                uuid TEXT NOT NULL,
                catalog_id TEXT NOT NULL,
                state TEXT NOT NULL,
                figures TEXT,
                score DOUBLE PRECISION,
                failures TEXT NOT NULL,
                error TEXT,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (run_id, gpu_id));
INSERT INTO "benchmark_gpus" VALUES('bmk_01M8RDZQ41ETA0DK12TEKT72XC','gpu_01M8RDZQ3S2RA4F49YZRTND6CE','GPU-emu-fixture-aaaa-0000-0000-000000000000','l4-24gb','passed','{"emulated":true,"compute":{"fp32_tflops":27.27,"fp16_tflops":27.27,"fp16_tensor_tflops":108.9,"bf16_tensor_tflops":108.9,"tf32_tensor_tflops":54},"memory":{"read_gbps":270,"write_gbps":270,"copy_gbps":270,"triad_gbps":270},"sustained":{"seconds":60,"mean_tflops":100,"min_over_median":0.98,"cv":0.01,"thermal_throttle_fraction":0,"power_throttle_fraction":0,"max_temperature_c":70,"mean_power_w":70},"device":{"pcie_width":16,"pcie_gen":4},"sanity":{"ok":true,"failures":[]}}',3.05943309528050768611e+01,'[]',NULL,1796116307073137);
INSERT INTO "benchmark_gpus" VALUES('bmk_01M8RDZQ41ETA0DK12TEKT72XC','gpu_01M8RDZQ3S2RA4F49YZRTND6CF','GPU-emu-fixture-aaaa-0000-0000-000000000001','l4-24gb','passed','{"emulated":true,"compute":{"fp32_tflops":27.27,"fp16_tflops":27.27,"fp16_tensor_tflops":108.9,"bf16_tensor_tflops":108.9,"tf32_tensor_tflops":54},"memory":{"read_gbps":270,"write_gbps":270,"copy_gbps":270,"triad_gbps":270},"sustained":{"seconds":60,"mean_tflops":100,"min_over_median":0.98,"cv":0.01,"thermal_throttle_fraction":0,"power_throttle_fraction":0,"max_temperature_c":70,"mean_power_w":70},"device":{"pcie_width":16,"pcie_gen":4},"sanity":{"ok":true,"failures":[]}}',3.05943309528050768611e+01,'[]',NULL,1796116307073137);
INSERT INTO "benchmark_gpus" VALUES('bmk_01M8RDZQ7E7DAJZPP3YAP70PFT','gpu_01M8RDZQ4F1QYZGNY3CDF12384','GPU-emu-fixture-bbbb-0000-0000-000000000000','h100-sxm-80gb','passed','{"emulated":true,"compute":{"fp32_tflops":61.54800000000001,"fp16_tflops":123.09600000000002,"fp16_tensor_tflops":910.248,"bf16_tensor_tflops":910.248,"tf32_tensor_tflops":455.124},"memory":{"read_gbps":3082,"write_gbps":3082,"copy_gbps":3082,"triad_gbps":3082},"sustained":{"seconds":60,"mean_tflops":100,"min_over_median":0.98,"cv":0.01,"thermal_throttle_fraction":0,"power_throttle_fraction":0,"max_temperature_c":70,"mean_power_w":70},"device":{"pcie_width":16,"pcie_gen":4},"sanity":{"ok":true,"failures":[]}}',2.27421789589996649273e+02,'[]',NULL,1796116307181911);
INSERT INTO "benchmark_gpus" VALUES('bmk_01M8RDZQ7E7DAJZPP3YAP70PFT','gpu_01M8RDZQ4F1QYZGNY3CDF12385','GPU-emu-fixture-bbbb-0000-0000-000000000001','h100-sxm-80gb','passed','{"emulated":true,"compute":{"fp32_tflops":61.54800000000001,"fp16_tflops":123.09600000000002,"fp16_tensor_tflops":910.248,"bf16_tensor_tflops":910.248,"tf32_tensor_tflops":455.124},"memory":{"read_gbps":3082,"write_gbps":3082,"copy_gbps":3082,"triad_gbps":3082},"sustained":{"seconds":60,"mean_tflops":100,"min_over_median":0.98,"cv":0.01,"thermal_throttle_fraction":0,"power_throttle_fraction":0,"max_temperature_c":70,"mean_power_w":70},"device":{"pcie_width":16,"pcie_gen":4},"sanity":{"ok":true,"failures":[]}}',2.27421789589996649273e+02,'[]',NULL,1796116307181911);
INSERT INTO "benchmark_gpus" VALUES('bmk_01M8RDZQ7H85P9SA04A9M0FK1Y','gpu_01M8RDZQ4P29KAG3TSHFQ1TYHV','GPU-emu-fixture-cccc-0000-0000-000000000000','a100-sxm-80gb','error',NULL,NULL,'[]','the agent could not run the benchmark: docker engine unreachable: /var/run/docker.sock',1796116307185732);
INSERT INTO "benchmark_gpus" VALUES('bmk_01M8RDZQVC6RCJEREDE8BGQ1B4','gpu_01M8RDZQ3S2RA4F49YZRTND6CE','GPU-emu-fixture-aaaa-0000-0000-000000000000','l4-24gb','passed','{"emulated":true,"compute":{"fp32_tflops":28.785,"fp16_tflops":28.785,"fp16_tensor_tflops":114.95,"bf16_tensor_tflops":114.95,"tf32_tensor_tflops":57},"memory":{"read_gbps":285,"write_gbps":285,"copy_gbps":285,"triad_gbps":285},"sustained":{"seconds":60,"mean_tflops":100,"min_over_median":0.98,"cv":0.01,"thermal_throttle_fraction":0,"power_throttle_fraction":0,"max_temperature_c":70,"mean_power_w":70},"device":{"pcie_width":16,"pcie_gen":4},"sanity":{"ok":true,"failures":[]}}',32.2940160057387,'[]',NULL,1796116307820594);
INSERT INTO "benchmark_gpus" VALUES('bmk_01M8RDZQVC6RCJEREDE8BGQ1B4','gpu_01M8RDZQ3S2RA4F49YZRTND6CF','GPU-emu-fixture-aaaa-0000-0000-000000000001','l4-24gb','failed','{"emulated":true,"compute":{"fp32_tflops":27.27,"fp16_tflops":27.27,"fp16_tensor_tflops":108.9,"bf16_tensor_tflops":108.9,"tf32_tensor_tflops":54},"memory":{"read_gbps":150,"write_gbps":150,"copy_gbps":150,"triad_gbps":150},"sustained":{"seconds":60,"mean_tflops":100,"min_over_median":0.98,"cv":0.01,"thermal_throttle_fraction":0.6,"power_throttle_fraction":0,"max_temperature_c":70,"mean_power_w":70},"device":{"pcie_width":16,"pcie_gen":4},"sanity":{"ok":true,"failures":[]}}',2.49055182678283024708e+01,'[{"metric":"memory_triad_gbps","measured":150,"required":210,"guidance":"Memory bandwidth is low: check memory temperature and clocks, ECC errors and retired pages (nvidia-smi -q -d ECC,PAGE_RETIREMENT), and that no other process uses the GPU."},{"metric":"thermal_throttle_fraction","measured":0.6,"required":0.2,"guidance":"The GPU throttled for heat during 60.0% of the sustained load (max 70.0 °C): improve airflow and cooling, clean the heatsink, check fan speeds."}]',NULL,1796116307820594);
CREATE TABLE benchmark_runs (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                reason TEXT NOT NULL,
                state TEXT NOT NULL,
                requested_by TEXT,
                command_id TEXT NOT NULL,
                machine_phases BIGINT NOT NULL,
                emulated BIGINT NOT NULL,
                network TEXT,
                storage TEXT,
                failures TEXT NOT NULL,
                error TEXT,
                created_at BIGINT NOT NULL,
                finished_at BIGINT);
INSERT INTO "benchmark_runs" VALUES('bmk_01M8RDZQ41ETA0DK12TEKT72XC','mch_01M8RDZQ3RF67J2JA9CPCVX0PB','first_connect','passed',NULL,'cmd_01M8RDZQ41ETA0DK12TEKT72XD',1,1,'{"rtt_p50_ms":1,"rtt_p99_ms":3,"download_mbit_s":900,"upload_mbit_s":800}','{"seq_read_mb_s":1500,"seq_write_mb_s":1200,"rand_read_iops":90000,"rand_read_p50_us":90,"rand_read_p99_us":400,"direct_io":true}','[]',NULL,1796116307073137,1796116307141328);
INSERT INTO "benchmark_runs" VALUES('bmk_01M8RDZQ7E7DAJZPP3YAP70PFT','mch_01M8RDZQ4F1QYZGNY3CDF12381','first_connect','passed',NULL,'cmd_01M8RDZQ7E7DAJZPP3YAP70PFV',1,1,'{"rtt_p50_ms":1,"rtt_p99_ms":3,"download_mbit_s":900,"upload_mbit_s":800}','{"seq_read_mb_s":1500,"seq_write_mb_s":1200,"rand_read_iops":90000,"rand_read_p50_us":90,"rand_read_p99_us":400,"direct_io":true}','[]',NULL,1796116307181911,1796116307201115);
INSERT INTO "benchmark_runs" VALUES('bmk_01M8RDZQ7H85P9SA04A9M0FK1Y','mch_01M8RDZQ4P29KAG3TSHFQ1TYHR','first_connect','error',NULL,'cmd_01M8RDZQ7H85P9SA04A9M0FK1Z',1,1,NULL,NULL,'[]','the agent could not run the benchmark: docker engine unreachable: /var/run/docker.sock',1796116307185732,1796116307192472);
INSERT INTO "benchmark_runs" VALUES('bmk_01M8RDZQVC6RCJEREDE8BGQ1B4','mch_01M8RDZQ3RF67J2JA9CPCVX0PB','requested','failed','usr_01M8RDZPYE7D8A871G0VY86Y67','cmd_01M8RDZQVC6RCJEREDE8BGQ1B5',1,1,'{"rtt_p50_ms":1,"rtt_p99_ms":3,"download_mbit_s":900,"upload_mbit_s":800}','{"seq_read_mb_s":1500,"seq_write_mb_s":1200,"rand_read_iops":90000,"rand_read_p50_us":90,"rand_read_p99_us":400,"direct_io":true}','[]',NULL,1796116307820594,1796116307830952);
CREATE TABLE email_outbox (
                id TEXT PRIMARY KEY,
                created_at BIGINT NOT NULL,
                to_addr TEXT NOT NULL,
                subject TEXT NOT NULL,
                body TEXT,
                body_sha256 TEXT NOT NULL,
                message_id TEXT NOT NULL UNIQUE,
                kind TEXT NOT NULL,
                status TEXT NOT NULL,
                attempts BIGINT NOT NULL DEFAULT 0,
                next_attempt_at BIGINT NOT NULL,
                lease_until BIGINT,
                last_error TEXT,
                sent_at BIGINT);
INSERT INTO "email_outbox" VALUES('eml_01M8RDZQ181Q6SX97TQCQ4P5K0',1796116306984261,'pia.ops@example.net','gpunex: your provider application was received',NULL,'3e753043a9c613183045aa182accf3d3699ad1532ea7e2f814bdd947f83420e9','<eml_01M8RDZQ181Q6SX97TQCQ4P5K0@gpunex.test>','application.submitted','sent',1,1796116306984261,NULL,NULL,1796116306989459);
INSERT INTO "email_outbox" VALUES('eml_01M8RDZQ1BE45R7FNZYA41061J',1796116306987044,'pia.ops@example.net','gpunex: your provider application is approved',NULL,'f04e78e722885e2580bbc29d9b71403d9c68f8f7102764bb827e0815591846ab','<eml_01M8RDZQ1BE45R7FNZYA41061J@gpunex.test>','application.approved','sent',1,1796116306987044,NULL,NULL,1796116307046564);
INSERT INTO "email_outbox" VALUES('eml_01M8RDZQ1N690P7TD9K2D6KVQG',1796116306997659,'ada.ops@example.net','gpunex: your provider application was received',NULL,'9001db0d1d6124a64aaea4a40f18a32adb4b66001792d65f364c018dd9d3bcfc','<eml_01M8RDZQ1N690P7TD9K2D6KVQG@gpunex.test>','application.submitted','sent',1,1796116306997659,NULL,NULL,1796116307049584);
INSERT INTO "email_outbox" VALUES('eml_01M8RDZQ1S92NRVF2YXPB6T44J',1796116307001677,'ada.ops@example.net','gpunex: your provider application is approved',NULL,'7700799881aaf5488cd2d8ae3052e00cf9ee32b2abd0335b1fba679cde314232','<eml_01M8RDZQ1S92NRVF2YXPB6T44J@gpunex.test>','application.approved','sent',1,1796116307001677,NULL,NULL,1796116307052655);
INSERT INTO "email_outbox" VALUES('eml_01M8RDZQ1V981BJ9EQXGEEGZZQ',1796116307003014,'rex.ops@example.net','gpunex: your provider application was received',NULL,'76c244054277b4451fa3f30ab2daeed1d353ee091b5f962ac69ee06229af9c4a','<eml_01M8RDZQ1V981BJ9EQXGEEGZZQ@gpunex.test>','application.submitted','sent',1,1796116307003014,NULL,NULL,1796116307058900);
INSERT INTO "email_outbox" VALUES('eml_01M8RDZQ1X55N960VKPDQZMDBS',1796116307005700,'rex.ops@example.net','gpunex: your provider application was not approved',NULL,'b20679a30de4de6618b404663e4c8d781cc6ce98cee22d9e8035f162dc82c51d','<eml_01M8RDZQ1X55N960VKPDQZMDBS@gpunex.test>','application.rejected','sent',1,1796116307005700,NULL,NULL,1796116307064180);
INSERT INTO "email_outbox" VALUES('eml_01M8RDZQ21B9Q1R597WT002SS2',1796116307009759,'sam.ops@example.net','gpunex: your provider application was received',NULL,'94a67b76566ebc879330203183d4a416c3e042531c769e3e7a173e4b53c724c1','<eml_01M8RDZQ21B9Q1R597WT002SS2@gpunex.test>','application.submitted','sent',1,1796116307009759,NULL,NULL,1796116307071288);
INSERT INTO "email_outbox" VALUES('eml_01M8RDZQ25CHW2Q2YQSE7E3FR8',1796116307013658,'sam.ops@example.net','gpunex: more information needed for your provider application',NULL,'1f4b572cb1bf6b5acc1eb686dbfa8a042beb33fc2ea957fb4a96107c805d889f','<eml_01M8RDZQ25CHW2Q2YQSE7E3FR8@gpunex.test>','application.needs_info','sent',1,1796116307013658,NULL,NULL,1796116307094065);
INSERT INTO "email_outbox" VALUES('eml_01M8RDZQ29DJX2KF1CCH0Z6T6J',1796116307017672,'sam.ops@example.net','gpunex: your updated provider application was received',NULL,'2c7741575d0a279a937c4ee33f1730500b6b508abdb43ca19189069504412dd1','<eml_01M8RDZQ29DJX2KF1CCH0Z6T6J@gpunex.test>','application.resubmitted','sent',1,1796116307017672,NULL,NULL,1796116307100535);
INSERT INTO "email_outbox" VALUES('eml_01M8RDZQ2DF30C81HAA2YF6B8J',1796116307021771,'tess.ops@example.net','gpunex: your provider application was received',NULL,'af7088311542e8f9747c98a46612eb1872d50e052d6d2bd8b1541fb2ee1cf8d4','<eml_01M8RDZQ2DF30C81HAA2YF6B8J@gpunex.test>','application.submitted','sent',1,1796116307021771,NULL,NULL,1796116307106097);
INSERT INTO "email_outbox" VALUES('eml_01M8RDZQ2NDYHPNV5W0BFD3BHT',1796116307029793,'nina.ops@example.net','gpunex: your provider application was received',NULL,'7d968b29bb19eda2cde2321be1a587a219048501470fdc6cd2691cecec4565b4','<eml_01M8RDZQ2NDYHPNV5W0BFD3BHT@gpunex.test>','application.submitted','sent',1,1796116307029793,NULL,NULL,1796116307110449);
INSERT INTO "email_outbox" VALUES('eml_01M8RDZQVQ6582HZ2S3T3J8BSK',1796116307831248,'pia@example.com','gpunex: GPU delisted on fixture-rig-a after its benchmark',NULL,'efe69918c0650d063e40199e56e0948d37c30c9aaf9a14ad5854a0a1f09ee6df','<eml_01M8RDZQVQ6582HZ2S3T3J8BSK@gpunex.test>','benchmark.delisted','sent',1,1796116307831248,NULL,NULL,1796116307923143);
INSERT INTO "email_outbox" VALUES('eml_01M8RE00A35WPGXD6Y6Y44ET64',1796116316483258,'nina.ops@example.net','gpunex: more information needed for your provider application','Hello Nina Needsinfo,

The reviewer of your provider application app_01M8RDZQ2NDYHPNV5W0BFD3BHP needs more information:

Please send a photo of the rack and the ISP contract.

Please edit the application and submit it again: https://gpunex.test/#/applications/app_01M8RDZQ2NDYHPNV5W0BFD3BHP

-- gpunex
','f52780352ec4861d61689dad7d5ae508b6936aba81d6379fea3d8b77dc120ab1','<eml_01M8RE00A35WPGXD6Y6Y44ET64@gpunex.test>','application.needs_info','pending',3,1796116320698066,NULL,'unavailable: smtp: Failed to connect to 127.0.0.1 port 49497 after 0 ms: Couldn''t connect to server',NULL);
CREATE TABLE gpu_models (
                id TEXT PRIMARY KEY,
                nvml_name TEXT NOT NULL,
                vram_gb BIGINT NOT NULL,
                fp32_tflops DOUBLE PRECISION NOT NULL,
                fp16_tflops DOUBLE PRECISION NOT NULL,
                fp16_tensor_tflops DOUBLE PRECISION NOT NULL,
                tf32_tensor_tflops DOUBLE PRECISION NOT NULL,
                mem_bw_gbps DOUBLE PRECISION NOT NULL,
                default_price_micro BIGINT NOT NULL,
                source TEXT NOT NULL,
                created_at BIGINT NOT NULL);
INSERT INTO "gpu_models" VALUES('h100-sxm-80gb','NVIDIA H100 80GB HBM3',80,66.9,133.8,989.4,494.7,3350.0,2200000,'builtin',1796116306857091);
INSERT INTO "gpu_models" VALUES('h100-pcie-80gb','NVIDIA H100 PCIe',80,51.2,102.4,756.0,378.0,2000.0,1900000,'builtin',1796116306857122);
INSERT INTO "gpu_models" VALUES('h200-sxm-141gb','NVIDIA H200',141,66.9,133.8,989.4,494.7,4800.0,2800000,'builtin',1796116306857134);
INSERT INTO "gpu_models" VALUES('a100-sxm-80gb','NVIDIA A100-SXM4-80GB',80,19.5,78.0,312.0,156.0,2039.0,1200000,'builtin',1796116306857143);
INSERT INTO "gpu_models" VALUES('a100-sxm-40gb','NVIDIA A100-SXM4-40GB',40,19.5,78.0,312.0,156.0,1555.0,900000,'builtin',1796116306857151);
INSERT INTO "gpu_models" VALUES('a100-pcie-80gb','NVIDIA A100 80GB PCIe',80,19.5,78.0,312.0,156.0,1935.0,1100000,'builtin',1796116306857159);
INSERT INTO "gpu_models" VALUES('a100-pcie-40gb','NVIDIA A100-PCIE-40GB',40,19.5,78.0,312.0,156.0,1555.0,850000,'builtin',1796116306857166);
INSERT INTO "gpu_models" VALUES('l40s-48gb','NVIDIA L40S',48,91.6,91.6,362.1,183.0,864.0,850000,'builtin',1796116306857173);
INSERT INTO "gpu_models" VALUES('l4-24gb','NVIDIA L4',24,30.3,30.3,121.0,60.0,300.0,400000,'builtin',1796116306857181);
INSERT INTO "gpu_models" VALUES('rtx4090-24gb','NVIDIA GeForce RTX 4090',24,82.6,82.6,165.2,82.6,1008.0,380000,'builtin',1796116306857188);
INSERT INTO "gpu_models" VALUES('rtxa6000-48gb','NVIDIA RTX A6000',48,38.7,38.7,154.8,77.4,768.0,450000,'builtin',1796116306857196);
INSERT INTO "gpu_models" VALUES('rtx5090-32gb','NVIDIA GeForce RTX 5090',32,104.8,104.8,419.0,104.8,1792.0,700000,'review',1796116307061533);
CREATE TABLE gpu_telemetry_minutes (
                gpu_id TEXT NOT NULL REFERENCES machine_gpus(id),
                minute BIGINT NOT NULL,
                samples BIGINT NOT NULL,
                utilization_sum BIGINT NOT NULL,
                temperature_max BIGINT NOT NULL,
                power_sum DOUBLE PRECISION NOT NULL,
                memory_used_max BIGINT NOT NULL,
                throttled_samples BIGINT NOT NULL,
                PRIMARY KEY (gpu_id, minute));
INSERT INTO "gpu_telemetry_minutes" VALUES('gpu_01M8RDZQ3S2RA4F49YZRTND6CE',29935271,24,1161,55,6012.0,1024,0);
INSERT INTO "gpu_telemetry_minutes" VALUES('gpu_01M8RDZQ3S2RA4F49YZRTND6CF',29935271,24,1161,55,6012.0,1024,0);
INSERT INTO "gpu_telemetry_minutes" VALUES('gpu_01M8RDZQ4F1QYZGNY3CDF12384',29935271,15,828,55,3757.5,1024,0);
INSERT INTO "gpu_telemetry_minutes" VALUES('gpu_01M8RDZQ4F1QYZGNY3CDF12385',29935271,15,828,55,3757.5,1024,0);
INSERT INTO "gpu_telemetry_minutes" VALUES('gpu_01M8RDZQ4P29KAG3TSHFQ1TYHV',29935271,25,1198,55,6262.5,1024,0);
CREATE TABLE login_failures (
                id TEXT PRIMARY KEY,
                email TEXT NOT NULL,
                ip TEXT NOT NULL,
                at BIGINT NOT NULL);
INSERT INTO "login_failures" VALUES('lgf_01M8RDZQ0H0KTNCCHKDHGYX1WT','carl@example.com','127.0.0.1',1796116306961418);
INSERT INTO "login_failures" VALUES('lgf_01M8RDZQ0N8F3VDEXXJDQ0CCJA','carl@example.com','127.0.0.1',1796116306965595);
INSERT INTO "login_failures" VALUES('lgf_01M8RDZQ0PBKDKGDQR902K9JTT','mallory@example.com','127.0.0.1',1796116306966597);
INSERT INTO "login_failures" VALUES('lgf_01M8RDZQ0QBKTQ94XTPE0Z70QQ','admin@gpunex.test','127.0.0.1',1796116306967615);
CREATE TABLE machine_events (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                at BIGINT NOT NULL,
                kind TEXT NOT NULL,
                detail TEXT NOT NULL);
INSERT INTO "machine_events" VALUES('mev_01M8RDZQ3S2RA4F49YZRTND6CC','mch_01M8RDZQ3RF67J2JA9CPCVX0PB',1796116307064872,'registered','{"remote":"127.0.0.1"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZQ3S2RA4F49YZRTND6CD','mch_01M8RDZQ3RF67J2JA9CPCVX0PB',1796116307064872,'inventory_changed','{"gpus":2}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZQ3S2RA4F49YZRTND6CH','mch_01M8RDZQ3RF67J2JA9CPCVX0PB',1796116307064872,'online','{"reason":"agent_connected"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZQ3S2RA4F49YZRTND6CJ','mch_01M8RDZQ3RF67J2JA9CPCVX0PB',1796116307064872,'connected','{"remote":"127.0.0.1","agent_version":"0.1.0-fake"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZQ4F1QYZGNY3CDF12382','mch_01M8RDZQ4F1QYZGNY3CDF12381',1796116307087092,'registered','{"remote":"127.0.0.1"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZQ4F1QYZGNY3CDF12383','mch_01M8RDZQ4F1QYZGNY3CDF12381',1796116307087092,'inventory_changed','{"gpus":2}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZQ4F1QYZGNY3CDF12387','mch_01M8RDZQ4F1QYZGNY3CDF12381',1796116307087092,'online','{"reason":"agent_connected"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZQ4F1QYZGNY3CDF12388','mch_01M8RDZQ4F1QYZGNY3CDF12381',1796116307087092,'connected','{"remote":"127.0.0.1","agent_version":"0.1.0-fake"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZQ4P29KAG3TSHFQ1TYHS','mch_01M8RDZQ4P29KAG3TSHFQ1TYHR',1796116307094012,'registered','{"remote":"127.0.0.1"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZQ4P29KAG3TSHFQ1TYHT','mch_01M8RDZQ4P29KAG3TSHFQ1TYHR',1796116307094012,'inventory_changed','{"gpus":1}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZQ4P29KAG3TSHFQ1TYHX','mch_01M8RDZQ4P29KAG3TSHFQ1TYHR',1796116307094012,'online','{"reason":"agent_connected"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZQ4P29KAG3TSHFQ1TYHY','mch_01M8RDZQ4P29KAG3TSHFQ1TYHR',1796116307094012,'connected','{"remote":"127.0.0.1","agent_version":"0.1.0-fake"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZQYY21NMP611416W6VF3','mch_01M8RDZQ4F1QYZGNY3CDF12381',1796116307934715,'disconnected','{"remote":"127.0.0.1"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZVSY6G2CHE4CFA1VTJHH','mch_01M8RDZQ4F1QYZGNY3CDF12381',1796116311870446,'offline','{"reason":"missed_heartbeats"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZVTSDSSBR4WC6FD4C7H3','mch_01M8RDZQ4F1QYZGNY3CDF12381',1796116311897497,'online','{"reason":"agent_connected"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZVTSDSSBR4WC6FD4C7H4','mch_01M8RDZQ4F1QYZGNY3CDF12381',1796116311897497,'connected','{"remote":"127.0.0.1","agent_version":"0.1.0-fake"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZVWN65B79R9JXC9K4VBM','mch_01M8RDZQ4P29KAG3TSHFQ1TYHR',1796116311957712,'disconnected','{"remote":"127.0.0.1"}');
INSERT INTO "machine_events" VALUES('mev_01M8RDZVWS7CFR84ZA6ZEVV2NP','mch_01M8RDZQ4P29KAG3TSHFQ1TYHR',1796116311961463,'connected','{"remote":"127.0.0.1","agent_version":"0.1.0-fake"}');
INSERT INTO "machine_events" VALUES('mev_01M8RE00AH7NRSCEXP3KVG16MV','mch_01M8RDZQ3RF67J2JA9CPCVX0PB',1796116316497592,'disconnected','{"remote":"127.0.0.1"}');
INSERT INTO "machine_events" VALUES('mev_01M8RE00AK655716F7XS66AVK7','mch_01M8RDZQ4F1QYZGNY3CDF12381',1796116316499070,'disconnected','{"remote":"127.0.0.1"}');
INSERT INTO "machine_events" VALUES('mev_01M8RE00AN9ZH4YVRNH6KKCJ2M','mch_01M8RDZQ4P29KAG3TSHFQ1TYHR',1796116316501461,'disconnected','{"remote":"127.0.0.1"}');
INSERT INTO "machine_events" VALUES('mev_01M8RE03M58795R7CA4BTCJMGM','mch_01M8RDZQ3RF67J2JA9CPCVX0PB',1796116319877208,'offline','{"reason":"missed_heartbeats"}');
INSERT INTO "machine_events" VALUES('mev_01M8RE03M93KY8NHK5NXGM988A','mch_01M8RDZQ4F1QYZGNY3CDF12381',1796116319877208,'offline','{"reason":"missed_heartbeats"}');
INSERT INTO "machine_events" VALUES('mev_01M8RE03MD55WX9Q6052K3GDX3','mch_01M8RDZQ4P29KAG3TSHFQ1TYHR',1796116319877208,'offline','{"reason":"missed_heartbeats"}');
CREATE TABLE machine_gpus (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                idx BIGINT NOT NULL,
                uuid TEXT NOT NULL,
                name TEXT NOT NULL,
                catalog_id TEXT NOT NULL,
                vram_mb BIGINT NOT NULL,
                emulated BIGINT NOT NULL,
                present BIGINT NOT NULL,
                enabled BIGINT NOT NULL,
                listed BIGINT NOT NULL,
                delisted_reason TEXT,
                performance_score DOUBLE PRECISION,
                last_benchmark_at BIGINT,
                info TEXT NOT NULL,
                telemetry TEXT,
                telemetry_at BIGINT,
                created_at BIGINT NOT NULL, benchmark_due_at BIGINT,
                UNIQUE (machine_id, uuid));
INSERT INTO "machine_gpus" VALUES('gpu_01M8RDZQ3S2RA4F49YZRTND6CE','mch_01M8RDZQ3RF67J2JA9CPCVX0PB',0,'GPU-emu-fixture-aaaa-0000-0000-000000000000','NVIDIA L4','l4-24gb',23034,1,1,1,1,NULL,32.2940160057387,1796116307830952,'{"driver_version":"550.54.15","cuda_driver_version":"12.4","pcie_gen_max":5,"pcie_gen_current":5,"pcie_width_max":16,"pcie_width_current":16,"power_limit_w":700}','{"utilization_pct":97,"memory_used_mb":1024,"temperature_c":55,"power_w":250.5,"sm_clock_mhz":1980,"throttle_reasons":[]}',1796116316285123,1796116307064872,NULL);
INSERT INTO "machine_gpus" VALUES('gpu_01M8RDZQ3S2RA4F49YZRTND6CF','mch_01M8RDZQ3RF67J2JA9CPCVX0PB',1,'GPU-emu-fixture-aaaa-0000-0000-000000000001','NVIDIA L4','l4-24gb',23034,1,1,1,0,'benchmark: memory_triad_gbps 150 < 210 required; thermal_throttle_fraction 0.60 > 0.20',2.49055182678283024708e+01,1796116307830952,'{"driver_version":"550.54.15","cuda_driver_version":"12.4","pcie_gen_max":5,"pcie_gen_current":5,"pcie_width_max":16,"pcie_width_current":16,"power_limit_w":700}','{"utilization_pct":97,"memory_used_mb":1024,"temperature_c":55,"power_w":250.5,"sm_clock_mhz":1980,"throttle_reasons":[]}',1796116316285123,1796116307064872,NULL);
INSERT INTO "machine_gpus" VALUES('gpu_01M8RDZQ4F1QYZGNY3CDF12384','mch_01M8RDZQ4F1QYZGNY3CDF12381',0,'GPU-emu-fixture-bbbb-0000-0000-000000000000','NVIDIA H100 80GB HBM3','h100-sxm-80gb',81559,1,1,1,1,NULL,2.27421789589996649273e+02,1796116307201115,'{"driver_version":"550.54.15","cuda_driver_version":"12.4","pcie_gen_max":5,"pcie_gen_current":5,"pcie_width_max":16,"pcie_width_current":16,"power_limit_w":700}','{"utilization_pct":97,"memory_used_mb":1024,"temperature_c":55,"power_w":250.5,"sm_clock_mhz":1980,"throttle_reasons":[]}',1796116316325134,1796116307087092,NULL);
INSERT INTO "machine_gpus" VALUES('gpu_01M8RDZQ4F1QYZGNY3CDF12385','mch_01M8RDZQ4F1QYZGNY3CDF12381',1,'GPU-emu-fixture-bbbb-0000-0000-000000000001','NVIDIA H100 80GB HBM3','h100-sxm-80gb',81559,1,1,0,0,NULL,2.27421789589996649273e+02,1796116307201115,'{"driver_version":"550.54.15","cuda_driver_version":"12.4","pcie_gen_max":5,"pcie_gen_current":5,"pcie_width_max":16,"pcie_width_current":16,"power_limit_w":700}','{"utilization_pct":97,"memory_used_mb":1024,"temperature_c":55,"power_w":250.5,"sm_clock_mhz":1980,"throttle_reasons":[]}',1796116316325134,1796116307087092,NULL);
INSERT INTO "machine_gpus" VALUES('gpu_01M8RDZQ4P29KAG3TSHFQ1TYHV','mch_01M8RDZQ4P29KAG3TSHFQ1TYHR',0,'GPU-emu-fixture-cccc-0000-0000-000000000000','NVIDIA A100-SXM4-80GB','a100-sxm-80gb',81920,1,1,1,0,'awaiting its first benchmark',NULL,NULL,'{"driver_version":"550.54.15","cuda_driver_version":"12.4","pcie_gen_max":5,"pcie_gen_current":5,"pcie_width_max":16,"pcie_width_current":16,"power_limit_w":700}','{"utilization_pct":97,"memory_used_mb":1024,"temperature_c":55,"power_w":250.5,"sm_clock_mhz":1980,"throttle_reasons":[]}',1796116316375381,1796116307094012,1796119907192472);
CREATE TABLE machine_intervals (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                state TEXT NOT NULL,
                started_at BIGINT NOT NULL,
                ended_at BIGINT,
                end_reason TEXT);
INSERT INTO "machine_intervals" VALUES('mit_01M8RDZQ3S2RA4F49YZRTND6CG','mch_01M8RDZQ3RF67J2JA9CPCVX0PB','online',1796116307064872,1796116319877208,'missed_heartbeats');
INSERT INTO "machine_intervals" VALUES('mit_01M8RDZQ4F1QYZGNY3CDF12386','mch_01M8RDZQ4F1QYZGNY3CDF12381','online',1796116307087092,1796116311870446,'missed_heartbeats');
INSERT INTO "machine_intervals" VALUES('mit_01M8RDZQ4P29KAG3TSHFQ1TYHW','mch_01M8RDZQ4P29KAG3TSHFQ1TYHR','online',1796116307094012,1796116319877208,'missed_heartbeats');
INSERT INTO "machine_intervals" VALUES('mit_01M8RDZVSY6G2CHE4CFA1VTJHG','mch_01M8RDZQ4F1QYZGNY3CDF12381','offline',1796116311870446,1796116311897497,'agent_connected');
INSERT INTO "machine_intervals" VALUES('mit_01M8RDZVTSDSSBR4WC6FD4C7H2','mch_01M8RDZQ4F1QYZGNY3CDF12381','online',1796116311897497,1796116319877208,'missed_heartbeats');
INSERT INTO "machine_intervals" VALUES('mit_01M8RE03M58795R7CA4BTCJMGK','mch_01M8RDZQ3RF67J2JA9CPCVX0PB','offline',1796116319877208,NULL,NULL);
INSERT INTO "machine_intervals" VALUES('mit_01M8RE03M93KY8NHK5NXGM9889','mch_01M8RDZQ4F1QYZGNY3CDF12381','offline',1796116319877208,NULL,NULL);
INSERT INTO "machine_intervals" VALUES('mit_01M8RE03MD55WX9Q6052K3GDX2','mch_01M8RDZQ4P29KAG3TSHFQ1TYHR','offline',1796116319877208,NULL,NULL);
CREATE TABLE machines (
                id TEXT PRIMARY KEY,
                provider_id TEXT NOT NULL REFERENCES providers(user_id),
                key_hash TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                status TEXT NOT NULL,
                emulated BIGINT NOT NULL,
                agent_version TEXT NOT NULL,
                host TEXT NOT NULL,
                inventory_hash TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                last_seen_at BIGINT NOT NULL,
                status_since BIGINT NOT NULL);
INSERT INTO "machines" VALUES('mch_01M8RDZQ3RF67J2JA9CPCVX0PB','usr_01M8RDZPYE7D8A871G0VY86Y67','ffa7ba299866c45c037881bfa583c1021a426dcb7d7a24be945753129e2ad133','fixture-rig-a','offline',1,'0.1.0-fake','{"hostname":"fixture-rig-a","cpu_model":"Fake EPYC 9654","cpu_cores":96,"ram_mb":1048576,"disk_total_mb":4000000,"disk_free_mb":3500000,"os":"Ubuntu 22.04","kernel":"6.5.0","docker_version":"24.0.7"}','47c592a99b399fed6767b0453b0f3f13ef92552d0c15497cd2039935f0ef1041',1796116307064872,1796116316285123,1796116319877208);
INSERT INTO "machines" VALUES('mch_01M8RDZQ4F1QYZGNY3CDF12381','usr_01M8RDZPYNESNR6E1HVMBX7VBB','9c3f525368d2e09e495ab99322d3c7f7eff36ee5a9156c314c07eb1b5833a73d','fixture-rig-b','offline',1,'0.1.0-fake','{"hostname":"fixture-rig-b","cpu_model":"Fake EPYC 9654","cpu_cores":96,"ram_mb":1048576,"disk_total_mb":4000000,"disk_free_mb":3500000,"os":"Ubuntu 22.04","kernel":"6.5.0","docker_version":"24.0.7"}','028ac34013e6d431dadaa8f277348a6232b1313f9e38a4119f93f2436152a1e8',1796116307087092,1796116316325134,1796116319877208);
INSERT INTO "machines" VALUES('mch_01M8RDZQ4P29KAG3TSHFQ1TYHR','usr_01M8RDZPYE7D8A871G0VY86Y67','24c9ad2c6b39b0e3ae99d77a32c3eac30d0c54936047adbeffc378c5dd572b82','fixture-rig-c','offline',1,'0.1.0-fake','{"hostname":"fixture-rig-c","cpu_model":"Fake EPYC 9654","cpu_cores":96,"ram_mb":1048576,"disk_total_mb":4000000,"disk_free_mb":3500000,"os":"Ubuntu 22.04","kernel":"6.5.0","docker_version":"24.0.7"}','36f15d559e7a2d8d6d53a30dc935a1bf3417dd5548c1046389c4f01a32ccfc85',1796116307094012,1796116316375381,1796116319877208);
CREATE TABLE notifications (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                at BIGINT NOT NULL,
                kind TEXT NOT NULL,
                title TEXT NOT NULL,
                body TEXT NOT NULL,
                link TEXT,
                read_at BIGINT);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQ181Q6SX97TQCQ4P5JZ','usr_01M8RDZPYE7D8A871G0VY86Y67',1796116306984240,'application.submitted','Application submitted','Your application was received and is in review.','/#/applications/app_01M8RDZQ181Q6SX97TQCQ4P5JW',1796116316471617);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQ1BE45R7FNZYA41061H','usr_01M8RDZPYE7D8A871G0VY86Y67',1796116306987021,'application.approved','Application approved (Community)','You are now a Community provider. Your agent token and the install command were sent to pia.ops@example.net.','/#/applications/app_01M8RDZQ181Q6SX97TQCQ4P5JW',NULL);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQ1N690P7TD9K2D6KVQF','usr_01M8RDZPYNESNR6E1HVMBX7VBB',1796116306997645,'application.submitted','Application submitted','Your application was received and is in review.','/#/applications/app_01M8RDZQ1E4CHAR60SPD971H97',1796116316477182);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQ1S92NRVF2YXPB6T44H','usr_01M8RDZPYNESNR6E1HVMBX7VBB',1796116307001664,'application.approved','Application approved (Enterprise)','You are now a Enterprise provider. Your agent token and the install command were sent to ada.ops@example.net.','/#/applications/app_01M8RDZQ1E4CHAR60SPD971H97',1796116316477182);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQ1V981BJ9EQXGEEGZZP','usr_01M8RDZPYX7YSP8RA4MHHBNK9P',1796116307003001,'application.submitted','Application submitted','Your application was received and is in review.','/#/applications/app_01M8RDZQ1T8NXREZBNF1ATKB26',NULL);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQ1X55N960VKPDQZMDBR','usr_01M8RDZPYX7YSP8RA4MHHBNK9P',1796116307005688,'application.rejected','Application not approved','Residential connection below 1 Gbps: not suitable at this time.','/#/applications/app_01M8RDZQ1T8NXREZBNF1ATKB26',NULL);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQ21B9Q1R597WT002SS1','usr_01M8RDZPZ93130SS1X9P0ZFZAS',1796116307009746,'application.submitted','Application submitted','Your application was received and is in review.','/#/applications/app_01M8RDZQ21B9Q1R597WT002SRY',NULL);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQ25CHW2Q2YQSE7E3FR7','usr_01M8RDZPZ93130SS1X9P0ZFZAS',1796116307013645,'application.needs_info','More information needed','Which UPS model, and how long does it hold the rack?','/#/applications/app_01M8RDZQ21B9Q1R597WT002SRY',NULL);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQ29DJX2KF1CCH0Z6T6H','usr_01M8RDZPZ93130SS1X9P0ZFZAS',1796116307017658,'application.resubmitted','Application resubmitted','Your updated application was received and is back in review.','/#/applications/app_01M8RDZQ21B9Q1R597WT002SRY',NULL);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQ2DF30C81HAA2YF6B8H','usr_01M8RDZPZE0K9T5VNMHG4YT74W',1796116307021758,'application.submitted','Application submitted','Your application was received and is in review.','/#/applications/app_01M8RDZQ2DF30C81HAA2YF6B8E',NULL);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQ2NDYHPNV5W0BFD3BHS','usr_01M8RDZPZ20B4B0BW913S4EYTB',1796116307029780,'application.submitted','Application submitted','Your application was received and is in review.','/#/applications/app_01M8RDZQ2NDYHPNV5W0BFD3BHP',NULL);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQ65AJ3CZCYJZTGHM4HD','usr_01M8RDZPYE7D8A871G0VY86Y67',1796116307141733,'benchmark.listed','GPU listed on fixture-rig-a','These GPUs of machine fixture-rig-a passed their first benchmark and are now offered to customers: NVIDIA L4 (GPU 0), NVIDIA L4 (GPU 1).','/#/provider/benchmark?machine=mch_01M8RDZQ3RF67J2JA9CPCVX0PB',NULL);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQ81BWFA4E3NZ8KBQYDF','usr_01M8RDZPYNESNR6E1HVMBX7VBB',1796116307201413,'benchmark.listed','GPU listed on fixture-rig-b','These GPUs of machine fixture-rig-b passed their first benchmark and are now offered to customers: NVIDIA H100 80GB HBM3 (GPU 0), NVIDIA H100 80GB HBM3 (GPU 1).','/#/provider/benchmark?machine=mch_01M8RDZQ4F1QYZGNY3CDF12381',1796116316477182);
INSERT INTO "notifications" VALUES('ntf_01M8RDZQVQ6582HZ2S3T3J8BSJ','usr_01M8RDZPYE7D8A871G0VY86Y67',1796116307831217,'benchmark.delisted','GPU delisted on fixture-rig-a after its benchmark','These GPUs of machine fixture-rig-a did not reach the minimum figures and are no longer offered to customers: NVIDIA L4 (GPU 1).

NVIDIA L4 (GPU 1):
  - memory_triad_gbps 150 < 210 required. Memory bandwidth is low: check memory temperature and clocks, ECC errors and retired pages (nvidia-smi -q -d ECC,PAGE_RETIREMENT), and that no other process uses the GPU.
  - thermal_throttle_fraction 0.60 > 0.20. The GPU throttled for heat during 60.0% of the sustained load (max 70.0 °C): improve airflow and cooling, clean the heatsink, check fan speeds.

When you have fixed it, ask for a re-run in the Benchmark tab; a GPU that passes is listed again at once.','/#/provider/benchmark?machine=mch_01M8RDZQ3RF67J2JA9CPCVX0PB',NULL);
INSERT INTO "notifications" VALUES('ntf_01M8RE00A35WPGXD6Y6Y44ET63','usr_01M8RDZPZ20B4B0BW913S4EYTB',1796116316483242,'application.needs_info','More information needed','Please send a photo of the rack and the ISP contract.','/#/applications/app_01M8RDZQ2NDYHPNV5W0BFD3BHP',NULL);
CREATE TABLE provider_applications (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                status TEXT NOT NULL,
                body TEXT NOT NULL,
                suggested_tier TEXT NOT NULL,
                tier TEXT,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                first_submitted_at BIGINT,
                submitted_at BIGINT,
                decided_at BIGINT,
                decided_by TEXT);
INSERT INTO "provider_applications" VALUES('app_01M8RDZQ181Q6SX97TQCQ4P5JW','usr_01M8RDZPYE7D8A871G0VY86Y67','approved','{"contact":{"full_name":"Pia Provider","email":"pia.ops@example.net","company":""},"gpus":[{"model":"rtx4090-24gb","model_other":null,"quantity":2,"system_ram_gb":64,"upload_gbps":5E-1,"download_gbps":9E-1,"availability":{"kind":"schedule","timezone":"Europe/Rome","windows":[{"days":["mon","tue","wed"],"start":"08:00","end":"20:00"},{"days":["sat"],"start":"00:00","end":"24:00"}]},"location":{"city":"Milan","country":"IT","region":"eu-south"}},{"model":"l4-24gb","model_other":null,"quantity":2,"system_ram_gb":128,"upload_gbps":1E0,"download_gbps":1E0,"availability":{"kind":"always"},"location":{"city":"Turin","country":"IT","region":"eu-south"}}],"infrastructure":{"ups":false,"commitment_months":0,"maintenance_notes":""}}','community','community',1796116306984101,1796116306986846,1796116306984101,1796116306984101,1796116306986846,'usr_01M8RDZPY03EZY3YT1H1RTJNCG');
INSERT INTO "provider_applications" VALUES('app_01M8RDZQ1E4CHAR60SPD971H97','usr_01M8RDZPYNESNR6E1HVMBX7VBB','approved','{"contact":{"full_name":"Ada Lovelace","email":"ada.ops@example.net","company":"Analytical Engines DC"},"gpus":[{"model":"h100-sxm-80gb","model_other":null,"quantity":8,"system_ram_gb":1024,"upload_gbps":1E1,"download_gbps":1E1,"availability":{"kind":"always"},"location":{"city":"Milan","country":"IT","region":"eu-south"}},{"model":"a100-sxm-80gb","model_other":null,"quantity":4,"system_ram_gb":512,"upload_gbps":2.5E0,"download_gbps":5E0,"availability":{"kind":"always"},"location":{"city":"Frankfurt","country":"DE","region":"eu-central"}},{"model":"other","model_other":"NVIDIA B200 192GB","quantity":2,"system_ram_gb":256,"upload_gbps":1E0,"download_gbps":1E0,"availability":{"kind":"always"},"location":{"city":"Paris","country":"FR","region":"eu-west"}}],"infrastructure":{"ups":true,"commitment_months":12,"maintenance_notes":"2-hour window on the first Sunday of each month"}}','enterprise','enterprise',1796116306990318,1796116307001542,1796116306997585,1796116306997585,1796116307001542,'usr_01M8RDZPY03EZY3YT1H1RTJNCG');
INSERT INTO "provider_applications" VALUES('app_01M8RDZQ1T8NXREZBNF1ATKB26','usr_01M8RDZPYX7YSP8RA4MHHBNK9P','rejected','{"contact":{"full_name":"Rex Rejected","email":"rex.ops@example.net","company":""},"gpus":[{"model":"rtx4090-24gb","model_other":null,"quantity":2,"system_ram_gb":64,"upload_gbps":5E-1,"download_gbps":9E-1,"availability":{"kind":"schedule","timezone":"Europe/Rome","windows":[{"days":["mon","tue","wed"],"start":"08:00","end":"20:00"},{"days":["sat"],"start":"00:00","end":"24:00"}]},"location":{"city":"Milan","country":"IT","region":"eu-south"}}],"infrastructure":{"ups":false,"commitment_months":0,"maintenance_notes":""}}','community',NULL,1796116307002905,1796116307005637,1796116307002905,1796116307002905,1796116307005637,'usr_01M8RDZPY03EZY3YT1H1RTJNCG');
INSERT INTO "provider_applications" VALUES('app_01M8RDZQ21B9Q1R597WT002SRY','usr_01M8RDZPZ93130SS1X9P0ZFZAS','submitted','{"contact":{"full_name":"Sam Resubmitter","email":"sam.ops@example.net","company":"Sam''s Racks"},"gpus":[{"model":"h100-sxm-80gb","model_other":null,"quantity":8,"system_ram_gb":1024,"upload_gbps":1E1,"download_gbps":1E1,"availability":{"kind":"always"},"location":{"city":"Milan","country":"IT","region":"eu-south"}},{"model":"a100-sxm-80gb","model_other":null,"quantity":4,"system_ram_gb":512,"upload_gbps":2.5E0,"download_gbps":5E0,"availability":{"kind":"always"},"location":{"city":"Frankfurt","country":"DE","region":"eu-central"}},{"model":"other","model_other":"NVIDIA B200 192GB","quantity":2,"system_ram_gb":256,"upload_gbps":1E0,"download_gbps":1E0,"availability":{"kind":"always"},"location":{"city":"Paris","country":"FR","region":"eu-west"}}],"infrastructure":{"ups":true,"commitment_months":12,"maintenance_notes":"APC Smart-UPS SRT 10kVA, 25 minutes at full load"}}','enterprise',NULL,1796116307009650,1796116307017598,1796116307009650,1796116307017598,NULL,NULL);
INSERT INTO "provider_applications" VALUES('app_01M8RDZQ2DF30C81HAA2YF6B8E','usr_01M8RDZPZE0K9T5VNMHG4YT74W','submitted','{"contact":{"full_name":"Tess Queue","email":"tess.ops@example.net","company":""},"gpus":[{"model":"rtx4090-24gb","model_other":null,"quantity":2,"system_ram_gb":64,"upload_gbps":5E-1,"download_gbps":9E-1,"availability":{"kind":"schedule","timezone":"Europe/Rome","windows":[{"days":["mon","tue","wed"],"start":"08:00","end":"20:00"},{"days":["sat"],"start":"00:00","end":"24:00"}]},"location":{"city":"Milan","country":"IT","region":"eu-south"}}],"infrastructure":{"ups":false,"commitment_months":0,"maintenance_notes":""}}','community',NULL,1796116307021658,1796116307021658,1796116307021658,1796116307021658,NULL,NULL);
INSERT INTO "provider_applications" VALUES('app_01M8RDZQ2H52K8HYRKXFSMYXFA','usr_01M8RDZPZNES2M2BE619HYP7PF','draft','{"contact":{"full_name":"Dora Draft","email":"dora.ops@example.net","company":"Draft Compute"},"gpus":[{"model":"l40s-48gb","model_other":null,"quantity":4,"system_ram_gb":256,"upload_gbps":2E0,"download_gbps":2E0,"availability":{"kind":"always"},"location":{"city":"Lyon","country":"FR","region":"eu-west"}}],"infrastructure":{"ups":true,"commitment_months":null,"maintenance_notes":""}}','community',NULL,1796116307025603,1796116307026730,NULL,NULL,NULL,NULL);
INSERT INTO "provider_applications" VALUES('app_01M8RDZQ2NDYHPNV5W0BFD3BHP','usr_01M8RDZPZ20B4B0BW913S4EYTB','needs_info','{"contact":{"full_name":"Nina Needsinfo","email":"nina.ops@example.net","company":""},"gpus":[{"model":"rtx4090-24gb","model_other":null,"quantity":2,"system_ram_gb":64,"upload_gbps":5E-1,"download_gbps":9E-1,"availability":{"kind":"schedule","timezone":"Europe/Rome","windows":[{"days":["mon","tue","wed"],"start":"08:00","end":"20:00"},{"days":["sat"],"start":"00:00","end":"24:00"}]},"location":{"city":"Milan","country":"IT","region":"eu-south"}}],"infrastructure":{"ups":false,"commitment_months":0,"maintenance_notes":""}}','community',NULL,1796116307029689,1796116316483164,1796116307029689,1796116307029689,NULL,NULL);
INSERT INTO "provider_applications" VALUES('app_01M8RE00A929F0Q34HWSMZ79DG','usr_01M8RDZPZT01WG32PZ4CC5QAB0','draft','{"contact":{"full_name":"","email":"","company":""},"gpus":[],"infrastructure":{"ups":null,"commitment_months":null,"maintenance_notes":""}}','community',NULL,1796116316489139,1796116316489139,NULL,NULL,NULL,NULL);
INSERT INTO "provider_applications" VALUES('app_01M8RE00AC9043KK1A4419962H','usr_01M8RDZQ01EKDXT1JZBHKZTV2T','draft','{"contact":{"full_name":"Nell Null","email":"","company":"Null & Void Ltd"},"gpus":[{"model":"rtx4090-24gb","model_other":null,"quantity":2,"system_ram_gb":64,"upload_gbps":1E0,"download_gbps":1E0,"availability":{"kind":"always"},"location":{"city":"Vienna","country":"AT","region":"eu-central"}}],"infrastructure":{"ups":null,"commitment_months":null,"maintenance_notes":""}}','community',NULL,1796116316492116,1796116316492116,NULL,NULL,NULL,NULL);
INSERT INTO "provider_applications" VALUES('app_01M8RE00AEA4030MEK2578741D','usr_01M8RDZQ063SCMRVDWDGR09EEW','draft','{"contact":{"full_name":"Milo Milan","email":"milo.ops@example.net","company":"Navigli GPU"},"gpus":[{"model":"a100-pcie-80gb","model_other":null,"quantity":4,"system_ram_gb":512,"upload_gbps":2E0,"download_gbps":2E0,"availability":{"kind":"always"},"location":{"city":"Milan","country":"","region":null}}],"infrastructure":{"ups":true,"commitment_months":6,"maintenance_notes":""}}','enterprise',NULL,1796116316494706,1796116316494706,NULL,NULL,NULL,NULL);
CREATE TABLE providers (
                user_id TEXT PRIMARY KEY REFERENCES users(id),
                tier TEXT NOT NULL,
                status TEXT NOT NULL,
                application_id TEXT NOT NULL,
                approved_at BIGINT NOT NULL,
                approved_by TEXT NOT NULL);
INSERT INTO "providers" VALUES('usr_01M8RDZPYE7D8A871G0VY86Y67','community','active','app_01M8RDZQ181Q6SX97TQCQ4P5JW',1796116306986922,'usr_01M8RDZPY03EZY3YT1H1RTJNCG');
INSERT INTO "providers" VALUES('usr_01M8RDZPYNESNR6E1HVMBX7VBB','enterprise','active','app_01M8RDZQ1E4CHAR60SPD971H97',1796116307001591,'usr_01M8RDZPY03EZY3YT1H1RTJNCG');
CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL);
INSERT INTO "schema_migrations" VALUES(1,'accounts',1796116306833510);
INSERT INTO "schema_migrations" VALUES(2,'provider applications, providers, agent tokens, gpu catalog',1796116306837459);
INSERT INTO "schema_migrations" VALUES(3,'notifications and email outbox',1796116306841226);
INSERT INTO "schema_migrations" VALUES(4,'fleet: machines, GPUs, uptime intervals, telemetry, agent commands, workloads',1796116306845631);
INSERT INTO "schema_migrations" VALUES(5,'benchmarks: runs with their machine figures, per-GPU results, re-run due times',1796116306849567);
CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                token_hash TEXT NOT NULL UNIQUE,
                csrf_token TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                revoked_at BIGINT,
                ip TEXT NOT NULL DEFAULT '',
                user_agent TEXT NOT NULL DEFAULT '');
INSERT INTO "sessions" VALUES('ses_01M8RDZPYC0M699YAAMCJRJTA7','usr_01M8RDZPY03EZY3YT1H1RTJNCG','8d7e829df1c1b15469b95af4e9af24d4b2bff1d36613da28c1d317ed2ccc2430','csrf_uwprPG6-5miqLRhxDb5vkKq6jwRW0eIkQq2vt4z0cnY',1796116306891926,1796721106891926,NULL,'127.0.0.1','fixture/admin');
INSERT INTO "sessions" VALUES('ses_01M8RDZPYG80TEZH3MYXBZ008A','usr_01M8RDZPYE7D8A871G0VY86Y67','082468b86fc7e4c54105895b90aa830435f1122f8cddc464e5ec0c97ad50672e','csrf_WYEebCjFl_EjPWSxbGs55sFPDyTzK9yC2l5Ccr_vQNE',1796116306896114,1796721106896114,NULL,'127.0.0.1','fixture/pia');
INSERT INTO "sessions" VALUES('ses_01M8RDZPYS14QSZ88MJ7ZYD549','usr_01M8RDZPYNESNR6E1HVMBX7VBB','a8a40a08e7e6f1585e4dc177719a9580141b4d0bea16fadc040f839d8f270988','csrf_Lp1oQfcfP0JsjW2XrPzc-YtG1AmXxkCo2S3OP5seMoY',1796116306905556,1796721106905556,NULL,'127.0.0.1','fixture/ada');
INSERT INTO "sessions" VALUES('ses_01M8RDZPZ16RVYN5TMV3XHV0DA','usr_01M8RDZPYX7YSP8RA4MHHBNK9P','28c94a42a9c8c4285019a668e861bd2552f0c3a9f449339f57bb6fc9ff75856a','csrf_8GOUS0IbTRHP3lJ_2Mn4rrB6MB8MgxXVfy2XAs3kUBs',1796116306913493,1796721106913493,NULL,'127.0.0.1','fixture/rex');
INSERT INTO "sessions" VALUES('ses_01M8RDZPZ5EACW58M7J5X9Z7TN','usr_01M8RDZPZ20B4B0BW913S4EYTB','fdbd06637c870b62d642d9df729cdf32ef376104acd3e95184a9c7924389d638','csrf_DWWTSo16yldtA5472J5Riwj_7T9C27Ke5LPdAyLYQAA',1796116306917494,1796721106917494,NULL,'127.0.0.1','fixture/nina');
INSERT INTO "sessions" VALUES('ses_01M8RDZPZDF5H9H0SWWQ4JBEBB','usr_01M8RDZPZ93130SS1X9P0ZFZAS','a2c14e35ee97a7b431bcffa6062cc60c392361817e553de03783b81b8f913aaa','csrf_5F6QzvePZMAdlMYw2ransUYsFhiglH76HQPxQgPecfY',1796116306925467,1796721106925467,NULL,'127.0.0.1','fixture/sam');
INSERT INTO "sessions" VALUES('ses_01M8RDZPZH47AJ64DFRHBVAEM2','usr_01M8RDZPZE0K9T5VNMHG4YT74W','4c0e0c359d59ded900bafaf1c606e50ba4ea4076d04d82b361163657fa4966f4','csrf_PTRakRZFvrwrugd9h-Metocx5njzRoXsX9LfyzYIehM',1796116306929492,1796721106929492,NULL,'127.0.0.1','fixture/tess');
INSERT INTO "sessions" VALUES('ses_01M8RDZPZS1BD4Y766Q1RTJT1Q','usr_01M8RDZPZNES2M2BE619HYP7PF','ce226a356e9ec838e19dcb5cc6c6b8d168a0286290396fd6b370acfb959dce58','csrf_M-3Zd48j_NE-tr7iQ1yDjRfiSkr3YJ_o2lQJldx-j3Q',1796116306937445,1796721106937445,NULL,'127.0.0.1','fixture/dora');
INSERT INTO "sessions" VALUES('ses_01M8RDZPZX5ZXJ61HHYD6BVQKW','usr_01M8RDZPZT01WG32PZ4CC5QAB0','05c838a19f53cbdaf462da25f566b63e3781e050396b7227a663a1a9ea16329b','csrf_rkplyNPoc2kofjJN2y1GZ4829YrKRuiQsb962Mv5t-4',1796116306941507,1796721106941507,NULL,'127.0.0.1','fixture/eve');
INSERT INTO "sessions" VALUES('ses_01M8RDZQ05CVXPE92JWKMKYZJ0','usr_01M8RDZQ01EKDXT1JZBHKZTV2T','7b47db1a07cce79a30878ee977fce2d0d4b8b26ffc350f1da0daa43666c2a0a8','csrf_S522oi9gmzMoSIpVngx2zRT5jvMyw1lfnhUUFbFMTDo',1796116306949439,1796721106949439,NULL,'127.0.0.1','fixture/nell');
INSERT INTO "sessions" VALUES('ses_01M8RDZQ07ECMP5P8ZR9662T6Y','usr_01M8RDZQ063SCMRVDWDGR09EEW','8a4c44cc2768f7282735b700cbd134f828357b429ef69cf3b2313d0d205870a7','csrf_oUY2KEBy5PkKuW4I3C3Jd_ZogkV8cG2fSgRch6wBvQw',1796116306951505,1796721106951505,NULL,'127.0.0.1','fixture/milo');
INSERT INTO "sessions" VALUES('ses_01M8RDZQ0D5DS9R2HRGHD4918M','usr_01M8RDZQ09FVV7XVMD15PGNVAG','ac7465a20a3932f193f0f64a67d4854e12bf789bf76a8283d701a99c010393b5','csrf_4FbI7ijEBJ5SP2aacuP1Fs0u260v8dxhw7NYvRuWNYw',1796116306957452,1796721106957452,NULL,'127.0.0.1','fixture/carl');
INSERT INTO "sessions" VALUES('ses_01M8RDZQ0E3Y0254R0DXKR3EHK','usr_01M8RDZQ09FVV7XVMD15PGNVAG','03508b32f1de2f61d33823f1586d16be299c96fde6b54eb93425d779bbd5f434','csrf_GIK6v_n0mr1_vfLDYDQ5uZJOwmhQGsI96Rht39d9ZRs',1796116306958488,1796721106958488,1796116306959647,'127.0.0.1','fixture/carl');
CREATE TABLE user_roles (
                user_id TEXT NOT NULL REFERENCES users(id),
                role TEXT NOT NULL,
                granted_at BIGINT NOT NULL,
                granted_by TEXT,
                PRIMARY KEY (user_id, role));
INSERT INTO "user_roles" VALUES('usr_01M8RDZPY03EZY3YT1H1RTJNCG','customer',1796116306880477,'usr_01M8RDZPY03EZY3YT1H1RTJNCG');
INSERT INTO "user_roles" VALUES('usr_01M8RDZPY03EZY3YT1H1RTJNCG','admin',1796116306880519,'usr_01M8RDZPY03EZY3YT1H1RTJNCG');
INSERT INTO "user_roles" VALUES('usr_01M8RDZPYE7D8A871G0VY86Y67','customer',1796116306894331,'usr_01M8RDZPYE7D8A871G0VY86Y67');
INSERT INTO "user_roles" VALUES('usr_01M8RDZPYNESNR6E1HVMBX7VBB','customer',1796116306901552,'usr_01M8RDZPYNESNR6E1HVMBX7VBB');
INSERT INTO "user_roles" VALUES('usr_01M8RDZPYX7YSP8RA4MHHBNK9P','customer',1796116306909675,'usr_01M8RDZPYX7YSP8RA4MHHBNK9P');
INSERT INTO "user_roles" VALUES('usr_01M8RDZPZ20B4B0BW913S4EYTB','customer',1796116306914762,'usr_01M8RDZPZ20B4B0BW913S4EYTB');
INSERT INTO "user_roles" VALUES('usr_01M8RDZPZ93130SS1X9P0ZFZAS','customer',1796116306921574,'usr_01M8RDZPZ93130SS1X9P0ZFZAS');
INSERT INTO "user_roles" VALUES('usr_01M8RDZPZE0K9T5VNMHG4YT74W','customer',1796116306926664,'usr_01M8RDZPZE0K9T5VNMHG4YT74W');
INSERT INTO "user_roles" VALUES('usr_01M8RDZPZNES2M2BE619HYP7PF','customer',1796116306933611,'usr_01M8RDZPZNES2M2BE619HYP7PF');
INSERT INTO "user_roles" VALUES('usr_01M8RDZPZT01WG32PZ4CC5QAB0','customer',1796116306938591,'usr_01M8RDZPZT01WG32PZ4CC5QAB0');
INSERT INTO "user_roles" VALUES('usr_01M8RDZQ01EKDXT1JZBHKZTV2T','customer',1796116306945589,'usr_01M8RDZQ01EKDXT1JZBHKZTV2T');
INSERT INTO "user_roles" VALUES('usr_01M8RDZQ063SCMRVDWDGR09EEW','customer',1796116306950619,'usr_01M8RDZQ063SCMRVDWDGR09EEW');
INSERT INTO "user_roles" VALUES('usr_01M8RDZQ09FVV7XVMD15PGNVAG','customer',1796116306953584,'usr_01M8RDZQ09FVV7XVMD15PGNVAG');
INSERT INTO "user_roles" VALUES('usr_01M8RDZPYE7D8A871G0VY86Y67','provider',1796116306986948,'usr_01M8RDZPY03EZY3YT1H1RTJNCG');
INSERT INTO "user_roles" VALUES('usr_01M8RDZPYNESNR6E1HVMBX7VBB','provider',1796116307001610,'usr_01M8RDZPY03EZY3YT1H1RTJNCG');
CREATE TABLE users (
                id TEXT PRIMARY KEY,
                email TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                password_hash TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                disabled BIGINT NOT NULL DEFAULT 0);
INSERT INTO "users" VALUES('usr_01M8RDZPY03EZY3YT1H1RTJNCG','admin@gpunex.test','Rita Reviewer','$argon2id$v=19$m=8,t=1,p=1$t4pUXyMKN4EwAIAcmvsUwA$2lzAecAYU98iaq1fzdbr7izjYjzCP6HIi8pj3vqL9Y4',1796116306880462,0);
INSERT INTO "users" VALUES('usr_01M8RDZPYE7D8A871G0VY86Y67','pia@example.com','Pia Provider','$argon2id$v=19$m=8,t=1,p=1$JIe8ooJJNjI62Dh47B1O4Q$AG0n7FJyoAR8+idw8MddhKT6lSVPt0tCmtCapJ4PJv0',1796116306894236,0);
INSERT INTO "users" VALUES('usr_01M8RDZPYNESNR6E1HVMBX7VBB','ada@example.com','Ada Lovelace','$argon2id$v=19$m=8,t=1,p=1$/MyupR8UoA6LLYsxFFhcxw$lE8jW3cE/GbEApVcWi+LKnNGuAFfLsmOf2KUTQnf7ZQ',1796116306901450,0);
INSERT INTO "users" VALUES('usr_01M8RDZPYX7YSP8RA4MHHBNK9P','rex@example.com','Rex Rejected','$argon2id$v=19$m=8,t=1,p=1$i1Q3ffDKfg3ZOMTH7SsEFw$mJQvm+gJQd18QRfehGNGQJIMYqZT/8MQ7vzXHk+haik',1796116306909594,0);
INSERT INTO "users" VALUES('usr_01M8RDZPZ20B4B0BW913S4EYTB','nina@example.com','Nina Needsinfo','$argon2id$v=19$m=8,t=1,p=1$Q4Q79DDAU6k2j9TWEmlGPg$vLi21bENkP1L3aRAUfkQ2x1lm8C9TPJdTUH8RMBl3fQ',1796116306914702,0);
INSERT INTO "users" VALUES('usr_01M8RDZPZ93130SS1X9P0ZFZAS','sam@example.com','Sam Resubmitter','$argon2id$v=19$m=8,t=1,p=1$R4ZO+WRSZGjxcePQnQK1TA$GDHtKbIQDyCZsCjOgPo3IICR9cPypQ0V15UtBnJAo7g',1796116306921516,0);
INSERT INTO "users" VALUES('usr_01M8RDZPZE0K9T5VNMHG4YT74W','tess@example.com','Tess Queue','$argon2id$v=19$m=8,t=1,p=1$ukO4RQ2xVACUUTdnT0Fbjw$Xpc4YhcRwH5LjOA8rtq2LBwS6Y/w3Ai9w9oxa/yCRDQ',1796116306926609,0);
INSERT INTO "users" VALUES('usr_01M8RDZPZNES2M2BE619HYP7PF','dora@example.com','Dora Draft','$argon2id$v=19$m=8,t=1,p=1$FsKVBiYVpJAKa8znN6nhbg$gJiY+P5tJ74C6CoHjq+tKHhNYjowNZPkdJC75hWFLak',1796116306933556,0);
INSERT INTO "users" VALUES('usr_01M8RDZPZT01WG32PZ4CC5QAB0','eve@example.com','Eve Empty','$argon2id$v=19$m=8,t=1,p=1$2SDrEoKmwKnmBQfZrHBhuw$Jcd7LB2Sunwo15GyX4nkToD+ofOy6ANSapeKoC1alOU',1796116306938532,0);
INSERT INTO "users" VALUES('usr_01M8RDZQ01EKDXT1JZBHKZTV2T','nell@example.com','Nell Null','$argon2id$v=19$m=8,t=1,p=1$RrPSlKh6BkILUgkuFrtfgg$sE/CZlU1OLl2xcAKFch3Ph4QuUjZxXDaFHzR8QKNhHw',1796116306945536,0);
INSERT INTO "users" VALUES('usr_01M8RDZQ063SCMRVDWDGR09EEW','milo@example.com','Milo Milan','$argon2id$v=19$m=8,t=1,p=1$cbo+w3i24dZ0ggAIuNQ0xA$5ayNn0lTp6kJNdomn73sTGj1IojtUI4ZtB2ZBL4xHU4',1796116306950560,0);
INSERT INTO "users" VALUES('usr_01M8RDZQ09FVV7XVMD15PGNVAG','carl@example.com','Carl Customer','$argon2id$v=19$m=8,t=1,p=1$ltni0yRldSL114mxgmWeyg$v+QI9Atv5zL5+HEuTh0nxAel60xcuzrFuUHRc2zH+rU',1796116306953530,0);
CREATE TABLE workload_logs (
                workload_id TEXT NOT NULL REFERENCES workloads(id),
                stream TEXT NOT NULL,
                seq BIGINT NOT NULL,
                at BIGINT NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY (workload_id, stream, seq));
INSERT INTO "workload_logs" VALUES('wl_01M8RDZQB2708SAWHH6EEB72A7','stdout',0,1796116307404528,'hello from the fixture
');
INSERT INTO "workload_logs" VALUES('wl_01M8RDZQB2708SAWHH6EEB72A7','stderr',0,1796116307405073,'careful
');
INSERT INTO "workload_logs" VALUES('wl_01M8RDZQB2708SAWHH6EEB72A7','stdout',1,1796116307406957,'done: ünïcödé ✓
');
INSERT INTO "workload_logs" VALUES('wl_01M8RDZQHK1YTQTYPADWSPNZ13','stdout',0,1796116307611415,'epoch 1/3
');
INSERT INTO "workload_logs" VALUES('wl_01M8RDZQHK1YTQTYPADWSPNZ13','stderr',0,1796116307612262,'RuntimeError: CUDA error: out of memory
');
CREATE TABLE workloads (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                provider_id TEXT NOT NULL,
                created_by TEXT NOT NULL,
                purpose TEXT NOT NULL,
                spec TEXT NOT NULL,
                gpu_ids TEXT NOT NULL,
                state TEXT NOT NULL,
                exit_code BIGINT,
                end_reason TEXT,
                end_party TEXT,
                container_id TEXT,
                created_at BIGINT NOT NULL,
                started_at BIGINT,
                ended_at BIGINT,
                updated_at BIGINT NOT NULL);
INSERT INTO "workloads" VALUES('wl_01M8RDZQB2708SAWHH6EEB72A7','mch_01M8RDZQ3RF67J2JA9CPCVX0PB','usr_01M8RDZPYE7D8A871G0VY86Y67','usr_01M8RDZPYE7D8A871G0VY86Y67','custom','{"workload_id":"wl_01M8RDZQB2708SAWHH6EEB72A7","image":"gpunex-test/busybox:1","command":["sh","-c","echo hello from the fixture; echo careful >&2; exit 3"],"env":{"FIXTURE":"release-0.1"},"gpu_uuids":["GPU-emu-fixture-aaaa-0000-0000-000000000000"],"memory_mb":2048,"cpus":2,"pids_limit":1024,"scratch_mb":4096,"timeout_s":0}','["gpu_01M8RDZQ3S2RA4F49YZRTND6CE"]','exited',3,'exited','customer','fixture-container-1',1796116307298989,1796116307308271,1796116307409049,1796116307409049);
INSERT INTO "workloads" VALUES('wl_01M8RDZQHK1YTQTYPADWSPNZ13','mch_01M8RDZQ3RF67J2JA9CPCVX0PB','usr_01M8RDZPYE7D8A871G0VY86Y67','usr_01M8RDZPY03EZY3YT1H1RTJNCG','custom','{"workload_id":"wl_01M8RDZQHK1YTQTYPADWSPNZ13","image":"gpunex-test/cuda:12","command":["python3","train.py","--epochs","3"],"env":{},"gpu_uuids":["GPU-emu-fixture-aaaa-0000-0000-000000000001"],"memory_mb":4096,"cpus":2,"pids_limit":1024,"scratch_mb":4096,"timeout_s":0}','["gpu_01M8RDZQ3S2RA4F49YZRTND6CF"]','failed',1,'CUDA error: out of memory','provider','fixture-container-2',1796116307507530,1796116307511749,1796116307613014,1796116307613014);
INSERT INTO "workloads" VALUES('wl_01M8RDZQR40VWSDW9EH2QF4Y81','mch_01M8RDZQ4F1QYZGNY3CDF12381','usr_01M8RDZPYNESNR6E1HVMBX7VBB','usr_01M8RDZPYNESNR6E1HVMBX7VBB','custom','{"workload_id":"wl_01M8RDZQR40VWSDW9EH2QF4Y81","image":"gpunex-test/missing:0","command":["true"],"env":{},"gpu_uuids":["GPU-emu-fixture-bbbb-0000-0000-000000000000","GPU-emu-fixture-bbbb-0000-0000-000000000001"],"memory_mb":8192,"cpus":4,"pids_limit":1024,"scratch_mb":4096,"timeout_s":0}','["gpu_01M8RDZQ4F1QYZGNY3CDF12384","gpu_01M8RDZQ4F1QYZGNY3CDF12385"]','failed',NULL,'start refused by the agent: image pull failed: gpunex-test/missing:0 not found','customer',NULL,1796116307716881,NULL,1796116307719252,1796116307719252);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX api_keys_user ON api_keys (user_id);
CREATE INDEX login_failures_email ON login_failures (email, at);
CREATE INDEX login_failures_ip ON login_failures (ip, at);
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX provider_applications_user ON provider_applications (user_id);
CREATE INDEX provider_applications_status ON provider_applications (status, submitted_at);
CREATE INDEX application_events_app ON application_events (application_id, at);
CREATE INDEX agent_tokens_provider ON agent_tokens (provider_id);
CREATE INDEX notifications_user ON notifications (user_id, id);
CREATE INDEX email_outbox_due ON email_outbox (status, next_attempt_at);
CREATE INDEX machines_provider ON machines (provider_id);
CREATE INDEX machines_status ON machines (status, last_seen_at);
CREATE INDEX machine_intervals_machine ON machine_intervals (machine_id, started_at);
CREATE INDEX machine_events_machine ON machine_events (machine_id, at);
CREATE INDEX agent_commands_machine ON agent_commands (machine_id, state, id);
CREATE INDEX agent_commands_state ON agent_commands (state, machine_id);
CREATE INDEX workloads_machine ON workloads (machine_id, state);
CREATE INDEX benchmark_runs_machine ON benchmark_runs (machine_id, id);
CREATE INDEX benchmark_runs_state ON benchmark_runs (state, created_at);
CREATE UNIQUE INDEX benchmark_runs_active ON benchmark_runs (machine_id) WHERE state = 'running';
CREATE INDEX benchmark_gpus_gpu ON benchmark_gpus (gpu_id, created_at);
COMMIT;
