"""The words people use around a secret, in the languages the embedded e5 model serves best.

`secrets.py` reads a sentence as: a *name* of a secret ("password", "Passwort", "door code", "seed
phrase", …), maybe a phrase that says whose or which one ("for the router", "de la oficina"), a
*separator* (":", "=", "is", "ist", "est", "é", "是", "は", …) and the *value*. The lists here are
that vocabulary; the reading itself lives in `secrets.py`. All entries are lower case and matched on
NFKC-normalised text.

A name is *strong* when any value after it is a secret ("the wifi password is sunflower"), *weak*
when only a login pair is ("login for the router: admin / …": a login alone is a user name).
"""

from __future__ import annotations

# Reasons, as the refusal says them: "… looks like a password".
API_KEY = "an API key or token"
PASSWORD = "a password"
PIN = "a PIN or access code"
RECOVERY_CODES = "2FA backup or recovery codes"
ONE_TIME_CODE = "a one-time or verification code"
SEED_PHRASE = "a wallet seed phrase"
SECURITY_ANSWER = "the answer to a security question"
ID_NUMBER = "a national identity number"
BANK_ACCOUNT = "a bank account number (IBAN)"
CARD = "a payment card number"
PRIVATE_KEY = "a private key"

# Names of a secret, as regular expressions (word boundaries are added around them), by reason.
NAMES: dict[str, list[str]] = {
    PASSWORD: [
        # en
        r"pass(?:word|phrase|wd)s?", r"pwd?", r"wi-?fi\s+(?:key|code)", r"wpa2?\s+key", r"network\s+key",
        r"credentials?",
        # de, nl, sv, da/no, fi, pl, cs/sk, hu, ro, tr
        r"\w*passwort(?:es)?", r"\w*kennwort(?:es)?", r"wlan-?(?:passwort|schlüssel|key)", r"zugangsdaten",
        r"wachtwoord", r"lösenord(?:et)?", r"adgangskode(?:n)?", r"passord(?:et)?", r"salasana", r"hasło",
        r"hasła", r"heslo", r"jelszó", r"parol[aă]", r"parolası", r"şifre(?:si|m|miz|niz)?",
        # fr, es, pt, it, ca
        r"mot\s+de\s+passe", r"mdp", r"contraseña", r"clave(?:\s+del?\s+wi-?fi)?", r"senha", r"palavra-passe",
        r"parola\s+d'ordine", r"contrasenya",
        # ru, uk, el, he, ar, hi, vi, id
        r"пароль", r"пароля", r"κωδικός(?:\s+πρόσβασης)?", r"סיסמ[הא]", r"كلمة\s+(?:المرور|السر)", r"पासवर्ड",
        r"mật\s+khẩu", r"kata\s+sandi",
    ],
    PIN: [
        r"pin(?:\s*-?\s*(?:code|number|nummer|nr|numéro|número|numero|код))?",
        r"keypad", (r"(?:door|gate|garage|alarm|unlock|lock|access|entry|entrance|keypad|building|safe|security|"
        r"lockbox|locker|padlock|phone|screen)\s+(?:code|combination|combo|pin)s?"),
        r"(?:safe|lock|padlock)'?s?\s+combination", r"passcode", r"unlock\s+pattern",
        # de, fr, es, pt, it, nl, sv, pl, ru, tr
        r"pin-?code", r"(?:tür|tor|alarm|zugangs|entsperr|sicherheits|tresor|garagen)-?code", r"geheimzahl",
        r"digicode", (r"code\s+(?:pin|d'accès|de\s+la\s+porte|du\s+portail|de\s+l'alarme|de\s+déverrouillage|"
        r"du\s+coffre|secret)"),
        (r"código\s+(?:pin|de\s+(?:acceso|acesso|la\s+puerta|desbloqueo|desbloqueio|seguridad|segurança|"
        r"la\s+alarma)|do\s+(?:portão|alarme|cofre)|da\s+porta|del\s+(?:portón|garaje))"),
        (r"codice\s+(?:pin|di\s+accesso|del\s+(?:portone|cancello|lucchetto|garage|citofono)|di\s+sblocco|"
         r"dell['’](?:allarme|antifurto|ingresso|appartamento))"),
        r"(?:toegangs|deur|alarm|pin)code", r"(?:port|dörr|larm)kod(?:en)?", r"kod\s+(?:pin|dostępu|do\s+drzwi)",
        r"пин-?код", r"код\s+(?:доступа|от\s+(?:двери|домофона|подъезда|сейфа))", r"kapı\s+kodu", r"pin\s+kodu",
    ],
    RECOVERY_CODES: [
        (r"(?:2fa|mfa|two[-\s]factor|backup|recovery|one[-\s]time|otp|totp|authenticator)\s+"
        r"(?:backup\s+)?(?:codes?|keys?|secret|seed)"),
        r"totp", r"backup-?codes?", r"wiederherstellungs-?codes?", r"codes?\s+de\s+(?:secours|récupération)",
        r"códigos?\s+de\s+(?:respaldo|recuperación|recuperação|backup)", r"codici\s+di\s+(?:backup|recupero)",
        r"herstelcodes?", r"kody\s+zapasowe", r"(?:резервные|коды)\s+(?:коды|восстановления)",
    ],
    ONE_TIME_CODE: [
        # en
        # (not "confirmation code": a booking's is no secret)
        (r"(?:verification|login|log-in|sign-?in|authentication|auth|2fa|mfa|sms|text(?:ed)?|one-?time|otp)\s+"
         r"(?:code|pin)s?"), r"otp", r"one-?time\s+pass(?:word|code)s?",
        # de, fr, es, pt, it, nl, sv, pl, ru
        r"(?:verifizierungs|einmal|anmelde|sms)-?code", r"einmalpasswort",
        r"code\s+(?:de\s+(?:vérification|validation)|à\s+usage\s+unique|sms|reçu\s+par\s+sms)",
        r"código\s+(?:de\s+(?:verificación|verificação|validación|validação|un\s+solo\s+uso|uso\s+único)|sms|por\s+sms|otp)",
        r"codice\s+(?:di\s+verifica|otp|sms|monouso)", r"verificatiecode",
        r"verifieringskod(?:en)?", r"engångskod(?:en)?", r"kod\s+(?:weryfikacyjny|sms|jednorazowy)",
        r"код\s+(?:подтверждения|из\s+смс|из\s+sms)", r"одноразов\w+\s+(?:код\w*|парол\w*)",
    ],
    SEED_PHRASE: [
        r"(?:wallet\s+)?(?:seed|recovery|mnemonic|backup|secret\s+recovery)\s+(?:phrase|words|sentence)",
        r"mnemonic", r"(?:12|24|twelve|twenty-four)\s+(?:seed\s+|recovery\s+|wallet\s+)?words",
        r"seed-?phrase", r"wiederherstellungs-?phrase", r"phrase\s+(?:de\s+récupération|secrète|mnémonique)",
        r"frase\s+(?:semilla|de\s+recuperación|de\s+recuperação|di\s+recupero|secreta|mnemônica)",
        r"herstelzin", r"сид-?фраз[аы]", r"мнемоническ\w+\s+фраз\w+",
        # the words of a wallet, said in words: "as 12 palavras da carteira", "las palabras semilla"
        (r"(?:(?:12|24|doze|vinte\s+e\s+quatro|doce|veinticuatro|douze|dodici|zwölf)\s+)?(?:palavras|palabras|mots|"
         r"parole|wörter)\s+(?:(?:da|de\s+la|de\s+ma|de\s+mon|della|des|der)\s+(?:minha\s+|mi\s+|meiner\s+)?"
         r"(?:carteira|cartera|billetera|portefeuille|wallet|portafoglio|bitcoin)|(?:de\s+)?(?:semente|semilla|"
         r"recuperação|recuperación|récupération|recupero))"),
        r"frase\s+semente", r"semente\s+da\s+carteira", r"semilla\s+de\s+la\s+(?:cartera|billetera)",
    ],
    SECURITY_ANSWER: [
        r"(?:answer\s+to\s+(?:my|the|his|her|their|our)\s+)?security\s+(?:question(?:\s+answer)?|answer)s?",
        r"secret\s+(?:question|answer)s?", r"respuesta\s+secreta", r"réponse\s+secrète", r"resposta\s+secreta",
        r"risposta\s+segreta", r"geheime\s+antwort", r"memorable\s+(?:word|answer|information)",
        r"mother'?s\s+maiden\s+name", r"maiden\s+name", r"sicherheitsfrage", r"geheimfrage",
        r"question\s+(?:secrète|de\s+sécurité)", r"pregunta\s+(?:de\s+seguridad|secreta)",
        r"pergunta\s+(?:de\s+segurança|secreta)", r"domanda\s+(?:di\s+sicurezza|segreta)",
        r"beveiligingsvraag", r"контрольн\w+\s+(?:вопрос\w*|ответ\w*)",
    ],
    ID_NUMBER: [
        r"social\s+security(?:\s+number|\s+no\.?)?", r"ssn", r"national\s+(?:insurance|id(?:entity)?)\s*(?:number|no\.?|card)?",
        r"ni\s+number", r"passport\s+(?:number|no\.?)", r"(?:tax|taxpayer)\s+(?:id|number|identification\s+number)",
        r"itin", r"id(?:entity)?\s+card\s+number", r"identity\s+number", r"driver'?s\s+licen[cs]e\s+(?:number|no\.?)",
        r"sozialversicherungsnummer", r"steuer-?id(?:entifikationsnummer)?", r"personalausweis(?:nummer)?",
        r"ausweisnummer", r"reisepassnummer", r"numéro\s+(?:de\s+sécurité\s+sociale|fiscal|d'identité|de\s+passeport)",
        r"nir", r"dni", r"nif", r"nuss", r"cpf", r"cartão\s+de\s+cidadão", (r"número\s+(?:de\s+)?(?:identidad|"
        r"identificação|pasaporte|passaporte|seguridad\s+social|segurança\s+social|contribuinte)"),
        r"codice\s+fiscale", r"bsn", r"burgerservicenummer", r"pesel", r"personnummer", r"henkilötunnus",
        r"aadhaar", r"pan\s+(?:card\s+)?number", r"снилс", r"инн", r"номер\s+паспорта", r"tc\s+kimlik(?:\s+no)?",
    ],
    BANK_ACCOUNT: [r"iban"],
}

# The same in scripts written without spaces: no word boundaries, and the separator is a particle.
CJK_NAMES: dict[str, list[str]] = {
    PASSWORD: ["密码", "密碼", "口令", "パスワード", "暗号", "비밀번호", "암호", "비번", "와이파이 비번"],
    PIN: ["暗証番号", "门禁密码", "門禁密碼", "开锁密码", "開鎖密碼", "支付密码", "핀번호", "PIN码", "PIN番号"],
    RECOVERY_CODES: ["备用码", "恢复码", "バックアップコード", "リカバリーコード", "복구 코드", "백업 코드"],
    ONE_TIME_CODE: ["验证码", "驗證碼", "校验码", "校驗碼", "动态码", "動態碼", "认证码", "認證碼", "确认码", "確認碼",
                    "認証コード", "確認コード", "認証番号", "確認番号", "ワンタイムパスワード", "인증번호", "인증 번호",
                    "인증 코드", "인증코드"],
    SEED_PHRASE: ["助记词", "シードフレーズ", "リカバリーフレーズ", "복구 구문", "시드 구문"],
    SECURITY_ANSWER: ["秘密の質問", "安全问题", "密保问题", "보안 질문"],
    ID_NUMBER: ["マイナンバー", "身份证号码", "身份证号", "身份证", "주민등록번호", "住民票コード"],
}
CJK_SEPARATORS = "はがを是为為：:=＝는은이가"

# Names of keys and tokens: their value is a secret when it looks random ("the master key for the
# vault is 7e3f…"), not when it is a word ("the key is under the mat").
KEY_NAMES = [
    r"api[\s_-]?keys?", r"access[\s_-]?keys?", r"secret(?:[\s_-]?key)?s?",
    r"(?:access|auth|bearer|api|bot|refresh|session)?[\s_-]?tokens?",
    r"client[\s_-]?secrets?", r"private[\s_-]?keys?", r"bearer",
    r"(?:encryption|signing|master|hmac|shared|license|licence|webhook|app|secret)[\s_-]?(?:key|secret)s?", r"salt",
    r"api-?schlüssel", r"(?:geheime[rn]?\s+)?\w*schlüssel", r"jeton(?:\s+d'accès)?", r"token\s+de\s+ac(?:ces|es)o",
    r"clé(?:\s+(?:api|secrète|privée|de\s+chiffrement))?",
    r"clave(?:\s+(?:api|secreta|privada))?", r"chave(?:\s+(?:de\s+)?(?:api|secreta|privada))?",
    r"chiave(?:\s+(?:api|segreta|privata))?", r"(?:api-?)?sleutel", r"klucz(?:\s+api)?", r"(?:api-?)?ключ",
]

# Words that say a code was sent to someone, so it is a one-time code: "the code they *texted* me is …".
SENT_WORDS = set(
    """texted text sms sms'd sent emailed e-mailed mailed messaged whatsapped
    mandaram enviaram enviou mandou recebi chegou mandaron enviaron envió mandó recibí llegó
    envoyé envoyée envoyés reçu reçue geschickt gesendet zugeschickt erhalten bekommen
    inviato inviata mandato mandata ricevuto ricevuta arrivato""".split()
)

# Verbs of typing a code on a keypad: "to open the garage *punch in* 8 8 1 2" (with a lock word in the sentence).
KEYPAD_VERBS = [
    r"punch(?:ed)?\s+in", r"key(?:ed)?\s+in", r"type\s+in", r"tap\s+in", r"enter", r"input",
    r"digite|digita|digitar|insira|tecleá|teclea|introduce|ingresa|marca", r"tape[sz]?|saisi(?:s|ssez)|compose[sz]?",
    r"tipp(?:e|en)|gib", r"digitare|inserisci|componi",
]

# What a code or key may name rather than open: "la clave *del curso* es ING-305" is a course's code.
NOT_SECRET_OF = set(
    """course class subject module product item model group section program programme project reference customer
    client employee student voter
    curso asignatura materia clase producto artículo modelo grupo sección programa proyecto referencia cliente
    empleado alumno estudiante elector registro
    cours matière produit article modèle groupe programme projet référence
    corso materia prodotto articolo modello gruppo sezione progetto riferimento
    kurs fach produkt artikel modell gruppe projekt""".split()
)

# Names of a secret that also mean an identifier: Spanish "clave" is a password and a code ("clave del curso").
CODE_LIKE_NAMES = {"clave"}

# Codes that open nothing: "the zip code of the office is …".
NOT_LOCK_CODES = set(
    """zip postal post area country dialing dialling calling promo promotional discount coupon voucher gift dress
    source qr bar tracking product colour color iso airport error status reference booking confirmation
    invitation invite referral course class tax""".split()
)

# "code" alone is a secret's name only for something it opens: "the code for the front door is 4455".
CODE_WORDS = [r"code", r"código", r"codice", r"kod", r"код", r"kodu"]
LOCK_WORDS = set(
    """door front-door gate garage alarm safe locker padlock lock building entrance house flat apartment
    office storage unit lockbox card bike
    karte fahrrad tür haustür wohnungstür tor garage alarmanlage tresor safe schloss gebäude eingang wohnung
    carte porte portail immeuble coffre coffre-fort alarme garage entrée appartement
    tarjeta puerta portal portón edificio caja alarma garaje entrada piso
    cartão porta portão prédio cofre alarme garagem entrada apartamento
    carta portone cancello cassaforte allarme garage ingresso appartamento
    deur voordeur poort kluis alarm garage ingang
    dörr dörren grind kassaskåp larm port porten
    drzwi brama sejf alarm garaż
    двери дверь домофона домофон сейфа сейф подъезда подъезд ворот ворота сигнализации
    kapı kapının""".split()
)

# Names that give a secret only with a login pair after them ("admin / hunter2", "bob:hunter2").
WEAK_NAMES = [r"log-?in", r"sign-?in", r"account", r"user(?:name)?\s+and\s+password", r"anmeldedaten",
              r"identifiants", r"credenciales", r"credenciais", r"accesso", r"учётн\w+\s+запис\w+"]

# Separators that give the value whatever it is: "password: …".
STRONG_SEPARATORS = {":", "=", "==", "->", "=>", "—", "–", "-", "：", "＝", "→"}

# Separators that are words: "is", "ist", "est", "é", "是", … The value must then look like one.
COPULAS = set(
    """is was are were 's remains became becomes stays reads now:
    ist war sind lautet lauten heißt bleibt
    est était sont c'est reste devient
    es era son está sigue queda
    é era são fica continua
    è era sono resta
    is was zijn luidt blijft
    är var blir
    er var blir
    on oli
    jest był była to brzmi
    je byl bylo zní
    это будет —
    olan
    είναι
    là
    adalah
    है""".split()
)

# Words between a name and its separator that say whose or which one it is: "the password *for the
# router* is …", "das Passwort *vom WLAN* ist …". At most a few words follow one of these.
QUALIFIERS = set(
    """for of to on at in from with 's
    für vom von zum zur des der am im an auf fürs bei meiner meines deiner deines seiner seines ihrer ihres unserer
    pour de du des d' à au aux sur chez
    para de del en al da do dos das no na em
    per di del della dello dei al allo alla nel nella sul
    voor van op bij
    för till på av hos
    for til på av hos
    do dla od na w
    k ke pro od na do
    от для к на у из від до
    için
    """.split()
)

# Words after a name that make it something else: "the password *manager* is 1Password".
COMPOUND_HEADS = set(
    """manager managers policy policies reset length field hint hints strength rule rules requirement
    requirements change changes expiry generator protection prompt screen page form box pad reader
    holder vault safe app apps book list file sheet history recovery
    manager richtlinie länge feld gestionnaire politique longueur champ gestor política longitud campo
    gerenciador comprimento criterio lunghezza beheerder beleid""".split()
)

# Words that may sit between the separator and the value: "the password is *now* …".
FILLERS = set(
    """now still currently actually just simply: the new
    jetzt nun immer noch aktuell
    maintenant toujours actuellement désormais
    ahora todavía actualmente
    agora ainda atualmente
    ora adesso ancora
    nu nog
    teraz nadal
    сейчас теперь
    """.split()
) - {"the"}

# What follows "password is" in an ordinary sentence: "the password is stored in the vault", "ist im
# Tresor", "est trop courte". A value among these is not a secret.
NOT_VALUES = set(
    """a an the in on at to of for by with from into not no never now still also being been very too
    stored saved kept written shared same secret secure strong weak long short managed set valid invalid
    correct wrong known unknown different new old changed reset required needed expired expiring rotated
    protected hidden encrypted missing lost forgotten easy hard simple complex private personal his her
    their my our your its mine yours hers theirs working broken fine ok okay there here locked
    case-sensitive due only written taped printed on-file changing updated sent emailed given posted
    something nothing anything what that this which why how where somewhere printed noted listed
    available unavailable required mandatory optional disabled enabled active inactive blank empty
    none n/a unchanged temporary default standard same above below attached inside outside digits
    characters letters numbers words
    ein eine einer der die das den dem im in auf zu nicht kein keine sehr zu noch jetzt schon gespeichert
    geheim sicher stark schwach lang kurz neu alt geändert abgelaufen falsch richtig vergessen bekannt
    unbekannt gleich hier dort notiert leer
    un une le la les l' de du des dans sur en pas trop très encore déjà enregistré stocké sécurisé fort
    faible long longue court courte nouveau nouvelle changé changée expiré oublié même ici là vide
    un una el la los las en no muy demasiado guardada guardado segura seguro fuerte débil larga corta nueva
    nuevo cambiada cambiado caducada olvidada misma aquí allí vacía
    um uma o a os as em no na não muito guardada segura forte fraca longa curta nova novo mudada alterada
    expirada esquecida mesma aqui ali vazia
    il lo gli nel nella non molto troppo salvata sicura debole lunga nuova cambiata scaduta dimenticata
    stessa qui lì vuota
    een het niet veilig sterk zwak kort nieuw oud gewijzigd verlopen vergeten hetzelfde hier daar
    en ett inte säker stark svag lång kort ny gammal ändrad utgången glömd samma här där
    nie bezpieczne silne słabe długie krótkie nowe stare zmienione
    не в на слишком очень надёжный надежный сложный простой новый старый изменён сохранён
    """.split()
)

# Conjunctions after a plain-word value that end it: "the wifi password is sunflower and …".
VALUE_ENDS = set(
    "and , but or und oder aber et ou mais y o pero e ou mas ed o ma en of maar och eller men og i а и или но ve".split()
)
